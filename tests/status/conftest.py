"""The status page tests: the core tests' in-memory SQLite store, and one recorded world
served on loopback (and one browser) shared by the whole session so the suite stays fast."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver

from tests.status.browser import open_browser
from tests.status.world import ServedWorld, serve_world

from ..core.conftest import blocking, store

__all__ = ["blocking", "store"]


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedWorld]:
    with serve_world(tmp_path_factory.mktemp("status-world")) as served:
        yield served


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    profile: Path = tmp_path_factory.mktemp("chromium-profile")
    driver = open_browser(profile)
    try:
        yield driver
    finally:
        driver.quit()
