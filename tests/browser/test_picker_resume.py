"""A 100 MiB file picked in the picker survives a dropped connection (issue 25).

The upload's hosts are reached through a TCP fault proxy (tests/reliability/faultproxy.py):
upload.<cname> for start and complete, www.<cname> (the ``location_url`` Stowage answers)
for the parts. Chromium maps both to 127.0.0.2, where the proxy listens on nginx's port
and passes TLS through to nginx on 127.0.0.1 (another address, or Chromium would send the
upload's requests down the HTTP/2 connection it has with the other hosts). Armed, it
resets the connection once after a number of bytes sent upward; the SDK's multipart
upload sends the parts that were cut off again (its retry, not a new upload) and
completes, the stored bytes those of the file, the progress given to the page rising to
100.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Playwright, expect

from tests.browser.picker_kit import Front, fetch, launch, noted, open_page, serve_site, serving
from tests.reliability.faultproxy import FaultProxy

MIB = 1024 * 1024
SIZE = 100 * MIB
CUT_AFTER = 30 * MIB  # bytes up the upload host's connection before the reset


class _Beside(FaultProxy):
    """The fault proxy on 127.0.0.2, at the port of the server it stands in for."""

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.2", self.target_port)
        self.port = self.target_port
        return self


class Proxy:
    """A FaultProxy on its own event loop in a thread, armed from the test's thread."""

    def __init__(self, target_port: int) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.proxy = self._call(_Beside(target_port).start())

    def _call(self, coroutine: object) -> FaultProxy:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)  # type: ignore[arg-type]

    def reset_once_after(self, after: int) -> None:
        """The next connection is reset after ``after`` bytes upward; the ones opened
        after the reset pass faithfully."""
        self.proxy.after, self.proxy.direction, self.proxy.mode = after, "up", "reset"
        asyncio.run_coroutine_threadsafe(self._disarm(), self.loop)

    async def _disarm(self) -> None:
        while self.proxy.faults == 0:
            await asyncio.sleep(0.005)
        self.proxy.mode = "pass"

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.close(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    yield from serving(tmp_path_factory.mktemp("picker"))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def proxy(front: Front) -> Iterator[Proxy]:
    https = int(front.cname.rsplit(":", 1)[1])
    proxy = Proxy(https)
    yield proxy
    proxy.close()


@pytest.fixture(scope="module")
def chromium(playwright: Playwright, front: Front, proxy: Proxy) -> Iterator[Browser]:
    browser = launch(
        playwright,
        front,
        rules=("MAP upload.stowage.test 127.0.0.2", "MAP www.stowage.test 127.0.0.2"),
    )
    yield browser
    browser.close()


def _big_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("wb") as out:
        for _ in range(SIZE // MIB):
            chunk = os.urandom(MIB)
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def test_a_100_mib_upload_survives_a_dropped_connection(
    chromium: Browser, site: str, front: Front, proxy: Proxy, tmp_path: Path
) -> None:
    big = tmp_path / "big.bin"
    expected = _big_file(big)
    proxy.reset_once_after(CUT_AFTER)  # before the page: prefetch opens the connection
    page = open_page(chromium, site, front)
    starts: list[str] = []
    page.on("request", lambda r: starts.append(r.url) if "/multipart/start" in r.url else None)
    page.evaluate("openPicker({})")
    page.locator("input.uppy-Dashboard-input").first.set_input_files(str(big))
    expect(page.locator(".uppy-Dashboard-Item")).to_have_count(1, timeout=20_000)
    page.locator(".uppy-StatusBar-actionBtn--upload").click()
    page.wait_for_function("window.done !== null", timeout=300_000)
    done = page.evaluate("window.done")
    # At least once: a second connection opened while armed could be cut too.
    assert proxy.proxy.faults >= 1, ("the connection was never cut", proxy.proxy.connections)
    assert proxy.proxy.connections >= 2  # Chromium connected again after the reset
    assert done["filesFailed"] == [], done
    assert len(starts) == 1, starts  # resumed: the parts sent again, not the whole file
    (meta,) = done["filesUploaded"]
    assert meta["size"] == SIZE
    assert hashlib.sha256(fetch(front, meta["url"])).hexdigest() == expected
    percents = [e[2] for e in noted(page) if e[0] == "progress"]
    assert percents and percents == sorted(percents) and percents[-1] == 100, percents
    page.close()
