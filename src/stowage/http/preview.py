"""The preview page on the CDN origin: ``/preview/<HANDLE>`` and
``/preview=css:"<URL>"/<HANDLE>`` (filestack-js's ``client.preview()``), and the page's
own scripts and styles at ``/preview-assets/``, pdf.js among them (vendored by
``scripts/vendor-web``).

Every name and text of the file goes into the page escaped; the page runs only its own
script, named by a fresh nonce (``'strict-dynamic'`` passes the trust on to pdf.js,
which it imports): no stored file on this origin can run as the page's script, whatever
its type. The file's bytes come from the CDN URL of the file itself, with the request's
credentials. docs/security.md, "The preview page", lists the policy.
"""

from __future__ import annotations

import html
import secrets
from pathlib import Path
from urllib.parse import quote, urlencode

from aiohttp import web

from stowage import errors
from stowage.core import previews
from stowage.core.previews import View
from stowage.core.security import Credentials
from stowage.http.api import request_credentials
from stowage.http.cdnpath import CdnPath
from stowage.http.keys import PARTS
from stowage.processing import officeformats
from stowage.processing.previewtask import csp_source

ASSETS = "/preview-assets/"
STATIC = Path(__file__).parent / "static" / "preview"
PDFJS = Path(__file__).parent / "static" / "vendor" / "pdfjs"
TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".wasm": "application/wasm",
    ".bcmap": "application/octet-stream",
    ".pfb": "application/octet-stream",
    ".ttf": "font/ttf",
    ".icc": "application/vnd.iccprofile",
}
#: The page's policy; {nonce} and {css} are filled per response.
PAGE_CSP = (
    "default-src 'none'; script-src 'nonce-{nonce}' 'strict-dynamic' 'wasm-unsafe-eval'; "
    "worker-src 'self'; connect-src 'self'; img-src 'self' blob: data:; font-src 'self' data:; "
    "style-src 'self'{css}; base-uri 'none'; form-action 'none'; object-src 'none'"
)
#: The assets' policy: what pdf.js's worker (a module served from here) may do.
ASSET_CSP = (
    "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


async def page(request: web.Request, path: CdnPath) -> web.Response:
    """The viewer page of one stored file, read with the request's credentials."""
    if path.tasks or path.url or path.urls or path.handles or path.metadata or not path.handle:
        raise errors.InvalidParameter(
            "preview shows one stored file: /preview/<HANDLE>, with no other task",
            parameter="preview",
        )
    assert path.preview is not None
    creds = request_credentials(request, path)
    api_key = path.api_key or request.query.get("key")
    plan = await request.app[PARTS].service.download(path.handle, creds, api_key)
    shown = await previews.view(plan)
    css = path.preview.get("css")
    nonce = secrets.token_urlsafe(18)
    body = render(shown, _file_url(path.handle, creds, api_key), str(css or ""), nonce)
    policy = PAGE_CSP.format(nonce=nonce, css=f" {csp_source(str(css))}" if css else "")
    return web.Response(
        text=body,
        content_type="text/html",
        charset="utf-8",
        headers={
            "Content-Security-Policy": policy,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "private, no-store",  # a nonce is for one answer
        },
    )


def _file_url(handle: str, creds: Credentials, api_key: str | None) -> str:
    """The file's CDN path, with what the page's request was allowed by."""
    query = {
        name: value
        for name, value in (
            ("key", api_key),
            ("policy", creds.policy),
            ("signature", creds.signature),
        )
        if value
    }
    tail = f"?{urlencode(query)}" if query else ""
    return f"/{quote(handle, safe='')}{tail}"


def render(shown: View, file_url: str, css: str, nonce: str) -> str:
    """The page: every value of the file escaped, the extra stylesheet last."""
    esc = html.escape
    extra = f'<link rel="stylesheet" href="{esc(css)}">' if css else ""
    joiner = "&" if "?" in file_url else "?"
    download = f"{file_url}{joiner}dl=true"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        '<link rel="icon" href="data:,">'  # no request for /favicon.ico: not a handle
        f"<title>{esc(shown.filename)}</title>"
        f'<link rel="stylesheet" href="{ASSETS}viewer.css">{extra}</head>'
        f'<body class="stowage-preview kind-{shown.kind}">'
        f'<header><span class="name">{esc(shown.filename)}</span> '
        f'<span class="type">{esc(shown.mimetype)}</span> '
        f'<a class="download" href="{esc(download)}" download>Download</a></header>'
        f"{_main(shown, file_url)}"
        f'<script type="module" nonce="{nonce}" src="{ASSETS}viewer.js"></script>'
        "</body></html>\n"
    )


def _main(shown: View, file_url: str) -> str:
    esc = html.escape
    if shown.kind == previews.IMAGE:
        return f'<main id="view"><img src="{esc(file_url)}" alt="{esc(shown.filename)}"></main>'
    if shown.kind == previews.CONVERTED:
        converted = "/output=format:png" + file_url
        return f'<main id="view"><img src="{esc(converted)}" alt="{esc(shown.filename)}"></main>'
    if shown.kind == previews.PDF:
        return f'<main id="view" data-kind="pdf" data-src="{esc(file_url)}"></main>'
    if shown.kind == previews.FILE and officeformats.kind_of(shown.mimetype, shown.filename):
        # An Office document, drawn by pdf.js as the PDF LibreOffice makes of it (a
        # derivative: converted once, cached, purged with the file).
        converted = "/output=format:pdf" + file_url
        return f'<main id="view" data-kind="pdf" data-src="{esc(converted)}"></main>'
    if shown.kind == previews.TEXT:
        more = '<p class="more">The file goes on; download it to read the rest.</p>'
        text = esc(shown.text or "", quote=False)
        return f'<main id="view"><pre>{text}</pre>{more if shown.truncated else ""}</main>'
    return (
        '<main id="view"><p class="none">This file cannot be shown here '
        f"({shown.size} bytes of {esc(shown.mimetype)}); download it.</p></main>"
    )


async def asset(request: web.Request) -> web.FileResponse:
    """``/preview-assets/<name>``: the page's script and styles, and pdf.js (``pdfjs/``)."""
    name = request.match_info["name"]
    root, rest = (
        (PDFJS, name.removeprefix("pdfjs/")) if name.startswith("pdfjs/") else (STATIC, name)
    )
    path = (root / rest).resolve()
    if (
        ".." in name.split("/")
        or not path.is_relative_to(root.resolve())
        or not path.is_file()
        or path.suffix not in TYPES
    ):
        raise errors.NotFound()
    return web.FileResponse(
        path,
        headers={
            "Content-Type": TYPES[path.suffix],
            "Content-Security-Policy": ASSET_CSP,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "public, max-age=3600",
        },
    )
