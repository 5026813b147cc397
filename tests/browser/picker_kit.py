"""What the picker's browser tests share: Stowage serving a domain's Filestack hosts
(``tests/sdk/cname_front.py``), the customer's page with filestack-js's browser build from
its npm package, unchanged, and headless Chromium resolving *.stowage.test to 127.0.0.1
(``--host-resolver-rules``) and trusting the test's certificate by its key
(``--ignore-certificate-errors-spki-list``): nothing changed on the machine.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import shutil
import ssl
import subprocess
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, Playwright

from tests.browser.conftest import CHROMIUM, FLAGS
from tests.sdk.cname_front import Front, serving
from tests.sdk.stack import NODE_MODULES, QuietHandler

PAGE = Path(__file__).parent / "picker" / "index.html"
SDK = NODE_MODULES / "filestack-js" / "build" / "browser" / "filestack.umd.js"
REMOTE = b"a file the picker was given a link to\n"

__all__ = ["Front", "serving"]


def serve_site(root: Path) -> Iterator[str]:
    """The customer's page and filestack-js's browser build, as files on loopback."""
    shutil.copy(PAGE, root / "index.html")
    shutil.copy(SDK, root / "filestack.umd.js")
    (root / "remote.txt").write_bytes(REMOTE)  # for the picker's URL source
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(QuietHandler, directory=str(root))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _spki(cert: Path) -> str:
    """base64 SHA-256 of the certificate's public key, as Chromium's flag wants it."""
    pub = subprocess.run(["openssl", "x509", "-in", str(cert), "-pubkey", "-noout"],
                         capture_output=True, check=True).stdout  # fmt: skip
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub,
                         capture_output=True, check=True).stdout  # fmt: skip
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def launch(
    playwright: Playwright, front: Front, rules: tuple[str, ...] = (), extra: tuple[str, ...] = ()
) -> Browser:
    """Chromium for the domain; ``rules`` go before the catch-all host mapping (the first
    rule that matches a host wins), ``extra`` are more command-line flags."""
    assert shutil.which(CHROMIUM), "Debian's chromium is not installed (setup.d/90-browser.sh)"
    args = [
        *FLAGS,
        "--host-resolver-rules=" + ", ".join([*rules, "MAP *.stowage.test 127.0.0.1"]),
        f"--ignore-certificate-errors-spki-list={_spki(front.folder / 'cert.pem')}",
        *extra,
    ]
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)


def open_page(
    chromium: Browser, site: str, front: Front, page: str = "index.html", **query: str
) -> Page:
    """The page with ``apikey`` (``front.apikey`` unless given) and ``cname`` in its query."""
    tab = chromium.new_page(viewport={"width": 1100, "height": 760})
    params = urllib.parse.urlencode({"apikey": front.apikey, "cname": front.cname, **query})
    tab.goto(f"{site}/{page}?{params}")
    return tab


def fetch(front: Front, url: str) -> bytes:
    """A stored file from the domain's CDN host, by its https URL, the test CA checked."""
    context = ssl.create_default_context(cafile=str(front.ca))
    host = url.split("/")[2]
    port = int(host.rsplit(":", 1)[1])
    plain = url.replace(f"https://{host}", f"https://127.0.0.1:{port}")
    request = urllib.request.Request(plain, headers={"Host": host})
    context.check_hostname = False  # the name is in the Host header, the CA still checked
    with urllib.request.urlopen(request, context=context, timeout=60) as answer:
        return bytes(answer.read())


def noted(page: Page) -> list[list[Any]]:
    return list(page.evaluate("window.events"))
