"""Headless Chromium (Debian's /usr/bin/chromium) driven by Playwright, against a real
``stowage serve``. Screenshots go to test-output/ (gitignored)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Playwright, sync_playwright

from tests.servers.stowage_serve import Running, running

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    # Module scope: the sync API keeps an event loop running in this thread while open,
    # which would break asyncio.run() in the tests that come after.
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    # Fails (never skips) when Chromium is missing: scripts/setup.d/90-browser.sh installs it.
    assert shutil.which(CHROMIUM), (
        "Debian's chromium is not installed (scripts/setup.d/90-browser.sh)"
    )
    # launch() gives every run a fresh, empty profile directory of its own.
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
    yield browser
    browser.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Running]:
    yield from running(tmp_path / "data")


@pytest.fixture
def shots() -> Path:
    OUTPUT.mkdir(exist_ok=True)
    return OUTPUT
