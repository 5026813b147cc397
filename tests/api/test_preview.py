"""``/preview/<HANDLE>`` on the CDN origin (issue 26): the viewer page's type, its policy,
the file's name and text escaped whatever they hold, and ``css`` checked before it
reaches the policy or the page."""

from __future__ import annotations

import html.parser
import string
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage.processing.previewtask import stylesheet
from tests.api.harness import Harness
from tests.api.test_transform import picture, stored
from tests.api.test_transform_rules import code_of
from tests.processing import officedocs, pdfs

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
HOSTILE_NAME = '"><script>alert(1)</script><img src=x onerror=alert(2)>.txt'
HOSTILE_TEXT = "</pre><script>alert(3)</script>\n<b onclick='x()'>&amp; \"q\"</b>\x00\x07end"


class Parsed(html.parser.HTMLParser):
    """The elements of a page and the text inside <title> and <pre>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.texts: dict[str, str] = {}
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1] == tag:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        if self._open and self._open[-1] in ("title", "pre", "span"):
            key = self._open[-1]
            self.texts[key] = self.texts.get(key, "") + data

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


async def page_of(harness: Harness, path: str, status: int = 200) -> tuple[Any, Parsed]:
    resp = await harness.cdn.get(path)
    body = await resp.text()
    assert resp.status == status, body[:500]
    parsed = Parsed()
    parsed.feed(body)
    return resp, parsed


def directives(csp: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for part in csp.split(";"):
        name, *values = part.split()
        found[name] = values
    return found


async def test_a_pdf_gets_the_viewer_page_with_a_strict_policy(harness: Harness) -> None:
    handle = await stored(harness, pdfs.three_pages(), "doc.pdf")
    resp, page = await page_of(harness, f"/preview/{handle}")
    assert resp.headers["Content-Type"] == "text/html; charset=utf-8"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert "no-store" in resp.headers["Cache-Control"]
    csp = directives(resp.headers["Content-Security-Policy"])
    assert csp["default-src"] == ["'none'"]
    (script,) = page.named("script")
    assert (
        csp["script-src"][0] == f"'nonce-{script['nonce']}'" and "'self'" not in csp["script-src"]
    )
    assert "'unsafe-inline'" not in csp["script-src"] and "'unsafe-eval'" not in csp["script-src"]
    assert script["src"] == "/preview-assets/viewer.js" and script["type"] == "module"
    assert csp["object-src"] == ["'none'"] and csp["base-uri"] == ["'none'"]
    assert csp["style-src"] == ["'self'"] and csp["connect-src"] == ["'self'"]
    (main,) = page.named("main")
    assert main["data-kind"] == "pdf" and main["data-src"] == f"/{handle}"
    _, with_key = await page_of(harness, f"/{harness.open_app.api_key}/preview/{handle}")
    assert with_key.named("main")[0]["data-src"] == f"/{handle}?key={harness.open_app.api_key}"
    again, _ = await page_of(harness, f"/preview/{handle}")
    assert again.headers["Content-Security-Policy"] != resp.headers["Content-Security-Policy"]
    for asset in ("viewer.js", "viewer.css", "pdfjs/pdf.min.mjs", "pdfjs/pdf.worker.min.mjs"):
        got = await harness.cdn.get(f"/preview-assets/{asset}")
        assert got.status == 200, asset
        assert got.headers["Content-Type"].startswith(("text/javascript", "text/css"))
        assert "default-src 'none'" in got.headers["Content-Security-Policy"]
    for bad in ("../preview.py", "pdfjs/../../preview/viewer.js", "nothing.js", "pdfjs/LICENSE"):
        assert (await harness.cdn.get(f"/preview-assets/{bad}")).status == 404, bad


async def test_an_image_is_an_img_and_other_files_a_download_link(harness: Harness) -> None:
    image = await stored(harness, picture(), "p.jpg")
    _, page = await page_of(harness, f"/preview/{image}")
    assert [i["src"] for i in page.named("img")] == [f"/{image}"]
    tiff = await stored(harness, picture(fmt=".tif"), "p.tif")
    _, page = await page_of(harness, f"/preview/{tiff}")
    assert [i["src"] for i in page.named("img")] == [f"/output=format:png/{tiff}"]
    converted = await harness.cdn.get(f"/output=format:png/{tiff}")
    assert converted.headers["Content-Type"] == "image/png"
    blob = await stored(harness, b"PK\x03\x04" + bytes(100), "a.zip")
    _, page = await page_of(harness, f"/preview/{blob}")
    assert not page.named("img") and not page.named("pre")
    (link,) = page.named("a")
    assert link["href"] == f"/{blob}?dl=true" and "download" in link


async def test_a_hostile_name_and_text_stay_text(harness: Harness) -> None:
    handle = await stored(harness, HOSTILE_TEXT.encode(), HOSTILE_NAME)
    meta = await (await harness.cdn.get(f"/{handle}/metadata")).json()
    _, page = await page_of(harness, f"/preview/{handle}")
    assert len(page.named("script")) == 1  # the page's own, nothing from the file
    assert not page.named("img") and not page.named("b")
    assert all("onclick" not in attrs and "onerror" not in attrs for _, attrs in page.tags)
    assert page.texts["title"] == meta["filename"]
    shown = HOSTILE_TEXT.replace("\x00", "\ufffd").replace("\x07", "\ufffd")
    assert page.texts["pre"] == shown


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_any_text_comes_back_as_the_same_text(harness: Harness, text: str) -> None:
    handle = await stored(harness, b"notes:" + text.encode(), "notes.txt")
    _, page = await page_of(harness, f"/preview/{handle}")
    assert len(page.named("script")) == 1
    expected = "".join(
        "\ufffd" if (ord(c) < 32 and c not in "\t\n\r") or c == "\x7f" else c for c in text
    )
    assert page.texts.get("pre", "") == "notes:" + expected


async def test_a_long_text_is_cut_with_a_note(harness: Harness) -> None:
    handle = await stored(harness, b"x" * (300 * 1024), "big.txt")
    resp = await harness.cdn.get(f"/preview/{handle}")
    body = await resp.text()
    assert "The file goes on" in body and body.count("x") >= 256 * 1024


async def test_css_goes_into_the_policy_and_the_page(harness: Harness) -> None:
    handle = await stored(harness, pdfs.three_pages(), "doc.pdf")
    css = "https://styles.example.com/themes/a.css?v=2&x=(1)"
    encoded = quote(f'"{css}"', safe="")  # as filestack-js's getUrl writes it
    resp, page = await page_of(harness, f"/preview=css:{encoded}/{handle}")
    csp = directives(resp.headers["Content-Security-Policy"])
    assert csp["style-src"] == ["'self'", "https://styles.example.com/themes/a.css"]
    sheets = [attrs["href"] for attrs in page.named("link") if attrs["rel"] == "stylesheet"]
    assert sheets == ["/preview-assets/viewer.css", css]
    plain = css.split("?")[0]  # written by hand: a "?" would start the query
    same, _ = await page_of(harness, f'/preview=css:"{plain}"/{handle}')
    assert directives(same.headers["Content-Security-Policy"])["style-src"] == csp["style-src"]


_BAD_CSS = [
    "http://styles.example.com/a.css",
    "javascript:alert(1)",
    "JAVASCRIPT://x/a.css",
    "data:text/css,body{}",
    "//styles.example.com/a.css",
    "https://",
    "https://user:pw@example.com/a.css",
    "https://example.com/a.css; script-src *",
    "https://example.com/a.css,https://evil.example",
    "https://example.com/a'.css",
    "https://example.com/a.css#x",
    "https://example.com/a<b>.css",
    "https://example.com/a%zz.css",
    "https://example.com:99999/a.css",
    "https://-bad-.example.com/a.css",
    "https://example.com/" + "a" * 1100,
]


@pytest.mark.parametrize("bad", _BAD_CSS)
async def test_a_bad_css_is_a_400(harness: Harness, bad: str) -> None:
    handle = await stored(harness, b"hello", "a.txt")
    resp = await harness.cdn.get(f"/preview=css:{quote(chr(34) + bad + chr(34), safe='')}/{handle}")
    assert resp.status == 400, bad
    assert await code_of(resp) == "INVALID_PARAMETER"
    assert (await resp.json())["error"]["details"]["parameter"] == "preview.css"


_UNSAFE = "\"'<>\\;, \t\n#`{}|^"


@given(
    st.text(alphabet=string.ascii_letters + "/.-", max_size=20),
    st.sampled_from(_UNSAFE),
    st.text(alphabet=string.ascii_letters + "/.-", max_size=20),
)
def test_no_url_with_a_character_that_ends_an_attribute_or_directive_passes(
    before: str, bad: str, after: str
) -> None:
    with pytest.raises(ValueError):
        stylesheet(f"https://example.com/{before}{bad}{after}.css")


@given(st.text(alphabet=string.ascii_letters + string.digits + "._~!$&()*+=:@-/", max_size=60))
def test_a_url_of_path_characters_passes_as_it_is(path: str) -> None:
    url = f"https://cdn.example.com/{path}"
    assert stylesheet(url) == url


async def test_preview_takes_no_other_task_and_is_not_on_the_process_address(
    harness: Harness,
) -> None:
    handle = await stored(harness, b"hello", "a.txt")
    resp = await harness.cdn.get(f"/preview/resize=width:10/{handle}")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"
    resp = await harness.api.get(f"/process/preview/{handle}")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"
    resp = await harness.cdn.get("/preview/nosuchhandle12345678")
    assert resp.status == 404


async def test_a_secured_app_needs_read_and_the_page_passes_it_on(harness: Harness) -> None:
    app = harness.secure_app
    handle = await stored(harness, pdfs.three_pages(), "doc.pdf", app=app)
    refused = await harness.cdn.get(f"/preview/{handle}")
    assert refused.status in (401, 403)
    creds = harness.policy(app, call=["read"], handle=handle)
    path = f"/preview/security=p:{creds['policy']},s:{creds['signature']}/{handle}"
    _, page = await page_of(harness, path)
    (main,) = page.named("main")
    source = str(main["data-src"])
    assert source.startswith(f"/{handle}?") and "signature=" in source
    got = await harness.cdn.get(source)
    assert got.status == 200 and (await got.read()).startswith(b"%PDF-")


@pytest.mark.needs("soffice", by="scripts/setup.d/79-office.sh")
async def test_an_office_document_is_drawn_as_the_pdf_it_converts_to(harness: Harness) -> None:
    handle = await stored(harness, officedocs.docx(["one", "two"], page_breaks=True), "d.docx")
    _, page = await page_of(harness, f"/preview/{handle}")
    (main,) = page.named("main")
    assert main["data-kind"] == "pdf" and main["data-src"] == f"/output=format:pdf/{handle}"
    converted = await harness.cdn.get(str(main["data-src"]))
    assert converted.status == 200 and converted.headers["Content-Type"] == "application/pdf"
    assert (await converted.read()).startswith(b"%PDF-")
