"""Headless Chromium for the browser tests (Debian's `chromium` + `chromium-driver`, driven by selenium), and
`chatmem inspect` started as a real process on a free loopback port.

.ci/run installs the two packages when chromium is missing; without them the tests fail with the command to
run, never skip. Set CHATMEM_SCREENSHOT_DIR (e.g. docs/images) to keep the screenshots docs/inspect.md shows.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = "apt-get install -y chromium chromium-driver (bash .ci/run does it)"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the session, 1280x900, no sandbox (CI runs as root)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.fail(f"headless Chromium is needed for the browser tests: {INSTALL}")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(argument)
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium-manager must not look for drivers online
    chrome = webdriver.Chrome(service=Service(driver), options=options)
    chrome.set_page_load_timeout(60)
    try:
        yield chrome
    finally:
        chrome.quit()


def screenshot(browser: Any, name: str) -> None:
    """Keep a screenshot for docs/inspect.md when CHATMEM_SCREENSHOT_DIR is set."""
    folder = os.environ.get("CHATMEM_SCREENSHOT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(Path(folder) / name))


class InspectServer:
    """`python -m flows.cli --data-dir D inspect` with no --port: it picks a free one and prints its URL."""

    def __init__(self, data_dir: Path) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        command = [sys.executable, "-m", "flows.cli", "--data-dir", str(data_dir), "inspect"]
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self.process.stdout is not None
        deadline, lines = time.monotonic() + 120, []
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            lines.append(line)
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            if found:
                self.url = found.group(0)
                return
        self.stop()
        raise AssertionError(f"chatmem inspect did not print its URL: {''.join(lines)}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
