"""The URL screenshots' settings (``screenshot_*``): the browser, how many run at once,
how long and how much memory each may take, and how long a drawing is kept."""

from __future__ import annotations

from dataclasses import dataclass

from stowage.config.base import GiB, MiB
from stowage.config.base import setting as _setting
from stowage.values import coerce


@dataclass
class ScreenshotSettings:
    screenshot_browser: str = _setting(
        "/usr/bin/chromium",
        "The headless Chromium urlscreenshot runs (Debian's chromium package).",
    )
    screenshot_jobs: int = _setting(
        2,
        "urlscreenshot browsers this node runs at once; more wait for one (within their "
        "deadline); 0: urlscreenshot is refused.",
        form=coerce.integer(0, 64),
    )
    screenshot_seconds: float = _setting(
        45.0,
        "Seconds one screenshot may take, the browser's start, the page's load and its "
        "delay included, before the browser is killed (504).",
        form=coerce.duration(1),
    )
    screenshot_memory: int = _setting(
        1 * GiB,
        "Data segment each browser process may use (RLIMIT_DATA), in bytes.",
        form=coerce.size(64 * MiB),
    )
    screenshot_max_bytes: int = _setting(
        64 * MiB,
        "Bytes one screenshot's page may load through the guard, every request counted.",
        form=coerce.size(1 * MiB),
    )
    screenshot_cache_seconds: int = _setting(
        3600,
        "Seconds a screenshot is kept as a derivative (a page changes: then it is drawn "
        "again) and clients may keep it; 0: every request draws the page.",
        form=coerce.integer(0, 7 * 24 * 3600),
    )
