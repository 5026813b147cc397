"""``urlscreenshot``: a web page drawn by headless Chromium, as a PNG the chain's other
tasks go on from: ``/<APIKEY>/urlscreenshot=width:800,height:600/resize=width:200/<URL>``.

The URL is checked by the URL guard before the browser starts (``403 URL_FORBIDDEN``
for an internal address); then every request of the page, its redirects and its
subresources goes through the guard proxy (``webproxy.py``): a main document the guard
refuses, by a redirect or a name resolving inside, is a ``403`` too, and a refused
subresource is left out of the picture. Each screenshot has its own proxy, browser
and profile, a deadline (``504 UPSTREAM_TIMEOUT``), a memory limit, a byte budget, and
waits for one of ``screenshot_jobs`` slots.

Options (filestack-js's schema): ``width`` (1-1920, default 1024) and ``height``
(1-8000, default 768) of the window; ``mode`` ``window`` (the window) or ``all`` (the
whole page, the window's height at least, 8000 px at most); ``delay`` (ms after the
page's load, 0-20000, default 1000); ``agent`` ``desktop`` or ``mobile`` (a phone's user
agent, touch, mobile layout); ``device`` (a named device's window, mobile) and
``orientation`` (``landscape`` turns the device's window).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.config import Settings
from stowage.core.urlguard import GuardedResolver, check_url
from stowage.processing import browser
from stowage.processing.base import Task
from stowage.processing.shotspec import DEVICES, MAX_HEIGHT, NAME
from stowage.processing.urlsources import Held
from stowage.processing.webproxy import (
    BLOCKED_HEADER,
    UNREACHABLE_HEADER,
    GuardProxy,
    refused_url,
)

MOBILE_AGENT = (
    "Mozilla/5.0 (Linux; Android 13; Pixel 5) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0 Mobile Safari/537.36"
)
DESKTOP_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0 Safari/537.36"
)


@dataclasses.dataclass(frozen=True)
class Window:
    width: int
    height: int
    mobile: bool
    full_page: bool
    delay: float  # seconds

    @classmethod
    def of(cls, task: Task) -> Window:
        width, height = _int(task.get("width"), 1024), _int(task.get("height"), 768)
        device = str(task.get("device") or "")
        if device:
            width, height = DEVICES[device]
            if task.get("orientation") == "landscape":
                width, height = height, width
        mobile = bool(device) or task.get("agent") == "mobile"
        full = task.get("mode", "all") == "all"
        return cls(width, height, mobile, full, _int(task.get("delay"), 1000) / 1000)


def _int(value: Any, default: int) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else default


class Screenshots:
    def __init__(self, settings: Settings, new_file: Callable[[str], Path]) -> None:
        self.settings = settings
        self._new_file = new_file
        self._slots = asyncio.Semaphore(max(1, settings.screenshot_jobs))

    @contextlib.asynccontextmanager
    async def opened(self, url: str, task: Task) -> AsyncIterator[Held]:
        """The page at ``url`` drawn into a PNG file, removed after."""
        dest = self._new_file(".png")
        try:
            await self.capture(url, Window.of(task), dest)
            yield Held(dest, "image/png", reused=False)
        finally:
            dest.unlink(missing_ok=True)

    async def capture(self, url: str, window: Window, dest: Path) -> None:
        settings = self.settings
        if settings.screenshot_jobs == 0:
            raise errors.TaskNotAvailable(f"{NAME} is turned off on this node (screenshot_jobs)")
        await self.checked(url)
        seconds = settings.screenshot_seconds
        try:
            async with asyncio.timeout(seconds):
                async with self._slots:
                    await self._capture(url, window, dest)
        except TimeoutError as exc:
            raise errors.UpstreamTimeout(f"the page was not drawn within {seconds:g} s") from exc

    async def checked(self, url: str) -> None:
        """The guard's answer for the page itself (its scheme, address and the addresses
        its name resolves to), before any browser starts or a kept drawing is served."""
        await _checked(url, self.settings.fetch_allow_private)

    async def _capture(self, url: str, window: Window, dest: Path) -> None:
        settings = self.settings
        with browser.profile() as folder:
            command = browser.argv(settings.screenshot_browser, folder, settings.screenshot_memory)
            try:
                page, listening = await browser.Browser.launch(command, folder)
            except browser.BrowserFailed as exc:  # the node's fault: a 5xx
                raise RuntimeError(f"the browser could not be started: {exc}") from exc
            proxy = GuardProxy(
                settings.fetch_allow_private, settings.screenshot_max_bytes, sock=listening
            )
            try:
                async with proxy:
                    png = await _draw(page, url, window, proxy)
            except browser.BrowserFailed as exc:
                raise errors.UpstreamError(f"the page could not be drawn: {exc}") from exc
            finally:
                await page.close()
        dest.write_bytes(png)


async def _checked(url: str, allow_private: bool) -> None:
    """The guard's answer for the page itself, before any browser starts."""
    parsed = check_url(url, allow_private)
    assert parsed.host is not None
    resolver = GuardedResolver(allow_private)
    try:
        await resolver.resolve(parsed.host, parsed.port or 443)
    except OSError as exc:
        raise errors.UpstreamError("the url's host cannot be resolved") from exc
    finally:
        await resolver.close()


async def _draw(page: browser.Browser, url: str, window: Window, proxy: GuardProxy) -> bytes:
    target = await page.call("Target.createTarget", url="about:blank")
    attached = await page.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)
    session = attached["sessionId"]

    async def call(method: str, **options: Any) -> dict[str, Any]:
        return await page.call(method, session, **options)

    await call("Page.enable")
    await call("Network.enable")
    await call(
        "Emulation.setDeviceMetricsOverride",
        width=window.width,
        height=window.height,
        deviceScaleFactor=1,
        mobile=window.mobile,
    )
    await call("Emulation.setUserAgentOverride", userAgent=_agent(window))
    if window.mobile:
        await call("Emulation.setTouchEmulationEnabled", enabled=True)
    frame = (await call("Page.getFrameTree"))["frameTree"]["frame"]["id"]
    start = len(page.events)
    navigated = await call("Page.navigate", url=url)
    if navigated.get("errorText"):  # the last document asked for: the page or a redirect
        _refuse_if_blocked(proxy, refused_url(proxy, _document_url(page.events[start:], frame)))
        raise errors.UpstreamError(f"the page could not be loaded: {navigated['errorText']}")
    await page.event("Page.loadEventFired", start)
    said = _document_headers(page.events[start:], frame)  # the proxy's, when it answered
    _refuse_if_blocked(proxy, BLOCKED_HEADER.lower() in said)
    if UNREACHABLE_HEADER.lower() in said:
        raise errors.UpstreamError("the page's host could not be reached")
    await asyncio.sleep(window.delay)
    return await _shot(call, window)


def _agent(window: Window) -> str:
    return MOBILE_AGENT if window.mobile else DESKTOP_AGENT


def _document_headers(events: list[dict[str, Any]], frame: str) -> set[str]:
    """The header names of the main document's last response (after any redirect)."""
    answers = [
        e["params"]["response"]
        for e in events
        if e.get("method") == "Network.responseReceived"
        and e["params"].get("type") == "Document"
        and e["params"].get("frameId") == frame
    ]
    return {k.lower() for k in answers[-1].get("headers", {})} if answers else set()


def _document_url(events: list[dict[str, Any]], frame: str) -> str:
    """The URL of the main document's last request (a redirect's target, if any)."""
    asked = [
        str(e["params"]["request"].get("url", ""))
        for e in events
        if e.get("method") == "Network.requestWillBeSent"
        and e["params"].get("type") == "Document"
        and e["params"].get("frameId") == frame
    ]
    return asked[-1] if asked else ""


def _refuse_if_blocked(proxy: GuardProxy, blocked: bool) -> None:
    if blocked and proxy.blocked:
        raise errors.UrlForbidden(
            "the page, or a redirect of it, points at a forbidden address",
            blocked=proxy.blocked[:3],
        )


async def _shot(call: Callable[..., Any], window: Window) -> bytes:
    if window.full_page:
        metrics = await call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
        height = min(MAX_HEIGHT, max(window.height, math.ceil(size.get("height", 0))))
        clip = {"x": 0, "y": 0, "width": window.width, "height": height, "scale": 1}
        shot = await call(
            "Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip
        )
    else:
        shot = await call("Page.captureScreenshot", format="png")
    return base64.b64decode(shot["data"])
