"""The status pages in a real headless Chromium: the recorded world's page with its links,
the empty page behind the login form, the database-down page; none wider than the
window on a desktop (1280 px) or a phone (390 px).

With ``FOLLOWUP_BOT_SCREENSHOTS`` set (``make screenshots``) the tests also write the docs'
screenshots there; without it they write nothing.
"""

from __future__ import annotations

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from bot.status import pages, pins, render, render_service
from sandbox.vllm_shapes import DOWNSTREAM, PIPELINE
from tests.status.browser import (
    HEIGHT,
    PHONE_HEIGHT,
    PHONE_WIDTH,
    WIDTH,
    keep_screenshot,
    overflow,
    read_png,
    viewport,
)
from tests.status.conftest import TOKEN
from tests.status.world import HOSTILE_STEP, MIGRATION_PR, PIN, RED_ISSUE, ServedWorld

# A blank window filters to a couple of distinct scanlines; a page of text to hundreds.
VARIED_ROWS = 20
GITHUB = f"https://github.com/{DOWNSTREAM}"
WIDTHS = {"desktop": (WIDTH, HEIGHT), "phone": (PHONE_WIDTH, PHONE_HEIGHT)}


@pytest.fixture
def page(world: ServedWorld, browser: WebDriver) -> WebDriver:
    viewport(browser, WIDTH, HEIGHT)
    browser.get(world.status_url)
    return browser


def hrefs(element: WebElement) -> list[str]:
    return [a.get_attribute("href") or "" for a in element.find_elements(By.TAG_NAME, "a")]


def test_the_page_renders_with_every_section(page: WebDriver) -> None:
    assert page.title == render.TITLE
    h3 = [h.text for h in page.find_elements(By.TAG_NAME, "h3") if h.is_displayed()]
    for heading in render.REPO_SECTIONS:
        assert heading in h3
    h2 = [h.text for h in page.find_elements(By.TAG_NAME, "h2") if h.is_displayed()]
    for heading in (
        render_service.HEADING_SERVICE,
        render_service.HEADING_ACTIVITY,
        DOWNSTREAM,
        render.HEADING_FAILURES,
    ):
        assert heading in h2
    assert page.find_element(By.TAG_NAME, "h1").is_displayed()


def test_the_pin_row_links_its_pr_and_commits(page: WebDriver) -> None:
    table = page.find_element(By.CSS_SELECTOR, "table.pins")
    assert table.is_displayed()
    [row] = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    cells = row.find_elements(By.TAG_NAME, "td")
    assert cells[0].text == PIN
    assert cells[1].text == pins.ACTIVE  # the mode
    assert cells[4].text == "1"  # behind by the one upstream merge
    assert cells[6].text.startswith("#")  # the bump PR
    number = cells[6].text.removeprefix("#")
    assert hrefs(cells[6]) == [f"{GITHUB}/pull/{number}"]
    assert cells[7].text == pins.OPEN
    # The pinned commit and upstream's head, abbreviated, link to the upstream repository.
    for cell in (cells[2], cells[3]):
        [href] = hrefs(cell)
        sha = cell.find_element(By.TAG_NAME, "code").get_attribute("title")
        assert href.endswith(f"/commit/{sha}")
        assert href.startswith("https://github.com/")
        assert "/vllm-project/vllm/" not in href  # the upstream's, not the downstream's


def test_the_pruned_entry_links_the_bump_that_prunes_it(page: WebDriver) -> None:
    pr = page.find_element(By.CSS_SELECTOR, "table.pins tbody tr td:nth-child(7)").text
    entry_rows = page.find_elements(By.CSS_SELECTOR, "table.entries tbody tr")
    pruned = [hrefs(row) for row in entry_rows if hrefs(row)]
    assert pruned == [[f"{GITHUB}/pull/{pr.removeprefix('#')}"]]


def test_red_migration_and_activity_links(page: WebDriver) -> None:
    red = page.find_element(By.CSS_SELECTOR, "table.red tbody tr")
    assert red.find_element(By.TAG_NAME, "td").text.endswith(HOSTILE_STEP)  # text, not run
    assert hrefs(red) == [
        f"https://buildkite.com/vllm/{PIPELINE}/builds/41",
        f"{GITHUB}/issues/{RED_ISSUE}",
    ]
    migration = page.find_element(By.CSS_SELECTOR, "table.migrations tbody tr")
    assert hrefs(migration) == [f"{GITHUB}/pull/{MIGRATION_PR}"]
    activity = page.find_element(By.CSS_SELECTOR, "table.activity")
    links = hrefs(activity)
    assert any(link.startswith(f"{GITHUB}/pull/") for link in links)
    builds = [link for link in links if link.startswith(f"https://buildkite.com/vllm/{PIPELINE}/")]
    assert any("/builds/" in link and "#" in link for link in builds)  # a retried job
    assert any("#issuecomment-" in link for link in links)  # a comment the bot posted
    assert page.execute_script("return document.images.length") == 0


def test_the_service_section(page: WebDriver) -> None:
    service = page.find_element(By.CSS_SELECTOR, "#service dl")
    assert service.is_displayed()
    facts = dict(
        zip(
            [dt.text for dt in service.find_elements(By.TAG_NAME, "dt")],
            [dd.text for dd in service.find_elements(By.TAG_NAME, "dd")],
            strict=True,
        )
    )
    assert facts[render_service.FACT_REPLICAS] == render_service.ONE_PROCESS
    assert facts[render_service.FACT_DATABASE] == render_service.DATABASE_UP
    assert "github:" in facts[render_service.FACT_RATE_LIMITS]


@pytest.mark.parametrize("size", WIDTHS)
def test_no_horizontal_overflow(page: WebDriver, size: str) -> None:
    width, height = WIDTHS[size]
    viewport(page, width, height)
    scroll, inner = overflow(page)
    assert inner == width
    assert scroll <= inner
    keep_screenshot(page, f"status-{size}")


def test_screenshot_is_a_varied_png_of_the_window(page: WebDriver) -> None:
    png = read_png(page.get_screenshot_as_png())
    width, height = page.execute_script("return [window.innerWidth, window.innerHeight]")
    assert (png.width, png.height) == (width, height)
    assert png.distinct_rows > VARIED_ROWS


def test_the_login_form_then_the_empty_page(empty_world: ServedWorld, browser: WebDriver) -> None:
    browser.delete_all_cookies()
    viewport(browser, PHONE_WIDTH, PHONE_HEIGHT)
    browser.get(empty_world.status_url)
    assert browser.title == pages.LOGIN_TITLE
    assert overflow(browser)[0] <= PHONE_WIDTH
    keep_screenshot(browser, "login-phone")
    field = browser.find_element(By.NAME, pages.TOKEN_FIELD)
    field.send_keys("not the token")
    field.submit()
    assert browser.find_element(By.CSS_SELECTOR, "p.errors").text == pages.LOGIN_WRONG
    field = browser.find_element(By.NAME, pages.TOKEN_FIELD)
    field.send_keys(TOKEN)
    field.submit()

    assert browser.title == render.TITLE
    assert browser.current_url == empty_world.status_url
    [cookie] = browser.get_cookies()
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert TOKEN not in cookie["value"]
    empty = [p.text for p in browser.find_elements(By.CSS_SELECTOR, "p.empty")]
    for text in (render.NO_PINS, render.NO_FAILURES, render_service.NO_ACTIVITY):
        assert text in empty
    assert overflow(browser)[0] <= PHONE_WIDTH
    keep_screenshot(browser, "empty-phone")
    browser.refresh()  # the cookie keeps the session
    assert browser.title == render.TITLE


def test_a_token_link_lands_on_the_clean_address(
    empty_world: ServedWorld, browser: WebDriver
) -> None:
    browser.delete_all_cookies()
    viewport(browser, WIDTH, HEIGHT)
    browser.get(f"{empty_world.status_url}?token={TOKEN}")
    assert browser.title == render.TITLE
    assert browser.current_url == empty_world.status_url
    assert TOKEN not in browser.execute_script("return window.history.length + location.href")


@pytest.mark.parametrize("size", WIDTHS)
def test_the_database_down_page(down_url: str, browser: WebDriver, size: str) -> None:
    width, height = WIDTHS[size]
    viewport(browser, width, height)
    browser.get(down_url)
    assert browser.title == pages.DOWN_TITLE
    assert browser.find_element(By.CSS_SELECTOR, "p.down").text == pages.DATABASE_UNREACHABLE
    assert "Traceback" not in browser.page_source
    scroll, inner = overflow(browser)
    assert scroll <= inner == width
    keep_screenshot(browser, f"database-down-{size}")
