"""The preview page in real headless Chromium (issue 26): pdf.js, vendored from npm, draws
a stored PDF's pages under the page's strict policy (no policy violation reported), and
filestack-js's ``client.preview(handle)``, with only ``cname`` set, opens that page on
cdn.<cname> (the domain's hosts as tests/browser/test_picker.py serves them)."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

from playwright.sync_api import Browser, ConsoleMessage, Frame, Page

from tests.browser.picker_kit import open_page
from tests.browser.test_picker import chromium, front, site  # noqa: F401
from tests.processing import pdfs
from tests.sdk.cname_front import Front
from tests.servers.stowage_serve import Running

#: Page 1's share of pure red pixels, read from the canvas pdf.js drew it on.
RED_SHARE = """() => {
  const canvas = document.querySelector('canvas.page[data-drawn]');
  if (!canvas) return null;
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let red = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i] > 200 && data[i + 1] < 60 && data[i + 2] < 60) red += 1;
  }
  return [red / (data.length / 4), canvas.width, document.querySelectorAll('canvas.page').length];
}"""


def store(api: str, key: str, data: bytes, filename: str) -> str:
    request = urllib.request.Request(
        f"{api}/api/store/S3?key={key}&filename={filename}", data=data, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return str(__import__("json").loads(answer.read())["handle"])


def policy_reports(page: Page) -> list[str]:
    found: list[str] = []

    def seen(message: ConsoleMessage) -> None:
        if message.type == "error" or "Content Security Policy" in message.text:
            found.append(message.text)

    page.on("console", seen)
    return found


def drawn(page: Page | Frame, seconds: float = 30) -> list[Any]:
    """pdf.js's first page, polled from here (the page's policy refuses the string
    predicates of Playwright's wait_for_function)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = page.evaluate("() => document.getElementById('view').dataset.state || ''")
        assert state != "failed", page.inner_text("#view")
        if state == "done":
            found = page.evaluate(RED_SHARE)
            assert found is not None
            return list(found)
        time.sleep(0.2)
    raise AssertionError(f"pdf.js drew nothing in {seconds}s: {page.inner_text('#view')}")


def test_pdfjs_draws_a_stored_pdf_under_the_pages_policy(browser: Browser, server: Running) -> None:
    handle = store(server.server.api, server.key, pdfs.three_pages(), "three.pdf")
    page = browser.new_page(viewport={"width": 900, "height": 700})
    reports = policy_reports(page)
    answer = page.goto(f"{server.server.cdn}/preview/{handle}")
    assert answer is not None and answer.status == 200
    assert "strict-dynamic" in answer.headers["content-security-policy"]
    share, width, count = drawn(page)
    assert share > 0.9 and width > 200, (share, width)
    assert count == 3 and page.locator("#view").get_attribute("data-pages") == "3"
    assert reports == []
    page.close()


def test_the_sdks_preview_opens_the_page_on_the_cname(
    chromium: Browser,  # noqa: F811
    site: str,  # noqa: F811
    front: Front,  # noqa: F811
) -> None:
    handle = store(front.server.api, front.apikey, pdfs.three_pages(), "from-sdk.pdf")
    page = open_page(chromium, site, front)
    with page.expect_popup() as opened:
        page.evaluate("(handle) => { client.preview(handle); }", handle)
    popup = opened.value
    reports = policy_reports(popup)
    popup.wait_for_load_state()
    assert popup.url == f"https://cdn.{front.cname}/preview/{handle}"
    share, _, count = drawn(popup)
    assert share > 0.9 and count == 3
    assert [r for r in reports if "Content Security Policy" in r] == []
    popup.close()
    # With `id`, the SDK embeds the page in an iframe of the customer's page instead.
    page.evaluate("(handle) => { client.preview(handle, { id: 'inline' }); }", handle)
    frame = page.wait_for_selector("#inline iframe").content_frame()
    assert frame is not None
    frame.wait_for_load_state()
    share, _, count = drawn(frame)
    assert share > 0.9 and count == 3 and frame.url == popup.url
    page.close()
