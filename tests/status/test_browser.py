"""The status page in a real headless Chromium, loaded from the bot serving a recorded world."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from bot.status import render
from tests.status.browser import WIDTH, read_png
from tests.status.world import HOSTILE_STEP, PIN, ServedWorld

# A blank window filters to a couple of distinct scanlines; a page of text to hundreds.
VARIED_ROWS = 20


@pytest.fixture(scope="module")
def page(world: ServedWorld, browser: WebDriver) -> WebDriver:
    browser.get(world.status_url)
    return browser


def test_the_page_renders_with_every_section(page: WebDriver) -> None:
    assert page.title == render.TITLE
    headings = [h.text for h in page.find_elements(By.TAG_NAME, "h3") if h.is_displayed()]
    for heading in (*render.REPO_SECTIONS, render.HEADING_FAILURES):
        assert heading in headings
    assert page.find_element(By.TAG_NAME, "h1").is_displayed()


def test_the_pin_row_is_visible_in_the_pins_table(page: WebDriver) -> None:
    table = page.find_element(By.CSS_SELECTOR, "table.pins")
    assert table.is_displayed()
    [row] = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert row.is_displayed()
    cells = [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
    assert cells[0] == PIN
    assert cells[3] == "1"  # behind by the one upstream merge
    assert cells[5].startswith("#")  # the bump PR
    assert cells[6] == "open"


def test_recorded_rows_are_visible(page: WebDriver) -> None:
    for name in ("entries", "migrations", "red", "flakiest", "failures"):
        table = page.find_element(By.CSS_SELECTOR, f"table.{name}")
        assert table.is_displayed(), name
    red = page.find_element(By.CSS_SELECTOR, "table.red td").text
    assert red.endswith(HOSTILE_STEP)  # shown as text, not run
    assert page.execute_script("return document.images.length") == 0


def test_no_horizontal_overflow(page: WebDriver) -> None:
    sizes: dict[str, Any] = page.execute_script(
        "return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth}"
    )
    assert sizes["inner"] == WIDTH
    assert sizes["scroll"] <= sizes["inner"]


def test_screenshot_is_a_varied_png_of_the_window(page: WebDriver) -> None:
    png = read_png(page.get_screenshot_as_png())
    width, height = page.execute_script("return [window.innerWidth, window.innerHeight]")
    assert (png.width, png.height) == (width, height)
    assert png.distinct_rows > VARIED_ROWS
