"""filestack-react's picker components in real headless Chromium (issue 25): a React page
bundled at test time from the pinned tests/browser/react/package*.json (installed by
scripts/setup.d/60-filestack-sdks.sh into .test-servers/filestack-react), with only
``cname`` in ``clientOptions``. filestack-react 6.2.0 brings filestack-js 3.51.6, which
loads picker 1.39.15 from static.<cname>: Stowage answers the same module there.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Playwright, expect

from tests.browser.picker_kit import Front, fetch, launch, open_page, serve_site, serving
from tests.multinode.cluster import ROOT

REACT = Path(__file__).parent / "react"
MODULES = ROOT / ".test-servers" / "filestack-react" / "node_modules"


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    yield from serving(tmp_path_factory.mktemp("picker"))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The filestack-js page's site, with the React page bundled beside it."""
    esbuild = MODULES / ".bin" / "esbuild"
    assert esbuild.exists(), "filestack-react is not installed (setup.d/60-filestack-sdks.sh)"
    root = tmp_path_factory.mktemp("site")
    (root / "react.html").write_bytes((REACT / "index.html").read_bytes())
    subprocess.run(
        [str(esbuild), str(REACT / "page.js"), "--bundle", "--minify", "--format=iife",
         "--target=es2019", '--define:process.env.NODE_ENV="production"',
         "--log-level=warning", f"--outfile={root / 'react-page.js'}"],
        env={**os.environ, "NODE_PATH": str(MODULES)}, check=True, timeout=120,
    )  # fmt: skip
    yield from serve_site(root)


@pytest.fixture(scope="module")
def chromium(playwright: Playwright, front: Front) -> Iterator[Browser]:
    browser = launch(playwright, front)
    yield browser
    browser.close()


def _upload(chromium: Browser, site: str, front: Front, kind: str) -> None:
    page = open_page(chromium, site, front, "react.html")
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/picker/" in r.url else None)
    page.evaluate("([kind]) => show(kind, {maxFiles: 2})", [kind])
    scope = "#root " if kind == "inline" else ""
    expect(page.locator(f"{scope}.uppy-Dashboard-inner")).to_be_visible(timeout=20_000)
    files = [
        {"name": f"{kind}-{n}.txt", "mimeType": "text/plain", "buffer": f"{kind} {n}\n".encode()}
        for n in (1, 2)
    ]
    page.locator(f"{scope}input.uppy-Dashboard-input").first.set_input_files(files=files)
    expect(page.locator(".uppy-Dashboard-Item")).to_have_count(2, timeout=10_000)
    page.locator(".uppy-StatusBar-actionBtn--upload").click()
    page.wait_for_function("window.done !== null", timeout=30_000)
    done = page.evaluate("window.done")
    assert done["filesFailed"] == [] and page.evaluate("window.errors") == []
    stored = {f["filename"]: fetch(front, f["url"]) for f in done["filesUploaded"]}
    assert stored == {f["name"]: f["buffer"] for f in files}
    assert asked == [f"https://static.{front.cname}/picker/1.39.15/picker.js"], asked
    page.close()


def test_picker_overlay_uploads_through_stowage(chromium: Browser, site: str, front: Front) -> None:
    _upload(chromium, site, front, "overlay")


def test_picker_inline_uploads_through_stowage(chromium: Browser, site: str, front: Front) -> None:
    _upload(chromium, site, front, "inline")


def test_picker_drop_pane_uploads_what_is_dropped(
    chromium: Browser, site: str, front: Front
) -> None:
    page = open_page(chromium, site, front, "react.html")
    page.evaluate("show('dropPane', {dropPane: {customText: 'Drop here (React)'}})")
    pane = page.locator("#root .stowage-drop-pane")
    expect(pane).to_contain_text("Drop here (React)", timeout=20_000)
    page.evaluate(
        """() => {
            const dt = new DataTransfer();
            dt.items.add(new File(['dropped in React\\n'], 'react.txt', { type: 'text/plain' }));
            const drop = { dataTransfer: dt, bubbles: true, cancelable: true };
            document.querySelector('.stowage-drop-pane').dispatchEvent(new DragEvent('drop', drop));
        }"""
    )
    page.wait_for_function("window.done !== null", timeout=30_000)
    (meta,) = page.evaluate("window.done")["filesUploaded"]
    assert meta["filename"] == "react.txt"
    assert fetch(front, meta["url"]) == b"dropped in React\n"
    page.close()
