"""Headless Chromium through selenium, found on PATH (``make test`` installs it; nothing is
downloaded)."""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from selenium.webdriver import ChromeOptions
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver

WIDTH, HEIGHT = 1280, 900
NOT_INSTALLED = (
    "{name} is not on PATH: the status page's browser tests need Debian's chromium and "
    "chromium-driver (apt-get install chromium chromium-driver; make test installs them)"
)
ARGUMENTS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    f"--window-size={WIDTH},{HEIGHT}",
)


def _required(name: str) -> str:
    found = shutil.which(name)
    # A missing browser fails the run (make test installs it): a skip would hide the page untested.
    assert found is not None, NOT_INSTALLED.format(name=name)
    return found


def open_browser(profile: Path) -> WebDriver:
    """A fresh headless Chromium with its own profile directory."""
    driver_path, browser_path = _required("chromedriver"), _required("chromium")
    options = ChromeOptions()
    options.binary_location = browser_path
    for argument in (*ARGUMENTS, f"--user-data-dir={profile}"):
        options.add_argument(argument)
    # An explicit driver path: Selenium Manager, which would download one, is not run.
    driver = WebDriver(service=Service(executable_path=driver_path), options=options)
    driver.set_window_size(WIDTH, HEIGHT)
    return driver


@dataclass(frozen=True)
class Png:
    width: int
    height: int
    distinct_rows: int  # how many different scanlines (1: a blank, single-colour image)


def read_png(data: bytes) -> Png:
    """The size of a PNG and how varied its pixels are, with the standard library only."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, chunks, header = 8, [], b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        offset += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    stride = 1 + width * channels * depth // 8
    raw = zlib.decompress(b"".join(chunks))
    # Each scanline starts with its filter byte; a filtered row of a blank image repeats.
    rows = {raw[i * stride + 1 : (i + 1) * stride] for i in range(height)}
    return Png(width, height, len(rows))


PHONE_WIDTH, PHONE_HEIGHT = 390, 844
# Where the browser tests write the docs' screenshots (``make screenshots`` sets it); unset,
# no file is written, so a normal run never rewrites the tracked images.
SCREENSHOTS = "FOLLOWUP_BOT_SCREENSHOTS"


def viewport(driver: WebDriver, width: int, height: int) -> None:
    """The page's viewport (CSS pixels, one device pixel each): a phone's is narrower
    than the smallest window a desktop browser opens."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < WIDTH},
    )


def overflow(driver: WebDriver) -> tuple[int, int]:
    """The page's scroll width and the viewport's width (no horizontal scroll: the first
    is at most the second)."""
    found = driver.execute_script(
        "return [document.scrollingElement.scrollWidth, window.innerWidth]"
    )
    return int(found[0]), int(found[1])


def keep_screenshot(driver: WebDriver, name: str) -> Path | None:
    """The whole page as ``<name>.png`` in the screenshots folder, when one is asked for."""
    folder = os.environ.get(SCREENSHOTS)
    if not folder:
        return None
    height = int(driver.execute_script("return document.scrollingElement.scrollHeight"))
    width = int(driver.execute_script("return window.innerWidth"))
    viewport(driver, width, min(height, MAX_SHOT_HEIGHT))
    try:
        target = Path(folder) / f"{name}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(driver.get_screenshot_as_png())
    finally:
        viewport(driver, width, HEIGHT if width == WIDTH else PHONE_HEIGHT)
    return target


MAX_SHOT_HEIGHT = 2400  # a long page is cut there: the docs show its top
