"""The status page tests: the core tests' in-memory SQLite store, and the worlds served on
loopback (a recorded one, an empty one behind a token, one whose database is down) and
one browser, shared by the whole session so the suite stays fast."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver

from tests.status.browser import open_browser
from tests.status.world import ServedWorld, nothing, serve_unreachable, serve_world

from ..core.conftest import blocking, store

__all__ = ["blocking", "store"]

TOKEN = "status-page-browser-token"


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedWorld]:
    with serve_world(tmp_path_factory.mktemp("status-world")) as served:
        yield served


@pytest.fixture(scope="session")
def empty_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedWorld]:
    """Nothing recorded yet, behind a status token (``TOKEN``)."""
    workdir = tmp_path_factory.mktemp("status-empty")
    with serve_world(workdir, nothing, status_token=TOKEN) as served:
        yield served


@pytest.fixture(scope="session")
def down_url() -> Iterator[str]:
    with serve_unreachable() as url:
        yield url


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    profile: Path = tmp_path_factory.mktemp("chromium-profile")
    driver = open_browser(profile)
    try:
        yield driver
    finally:
        driver.quit()
