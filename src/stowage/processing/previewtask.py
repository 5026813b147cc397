"""``preview`` in the task table: ``/preview/<HANDLE>`` and ``preview=css:"<URL>"`` (as
filestack-js's ``client.preview()`` builds them) ask for the viewer page of a stored file
on the CDN origin (``http/preview.py``). It is a request task: the grammar reads it into
the parsed path, never into a chain of the engine.

``css`` is the address of a stylesheet the page loads after its own. It goes into the
page's Content-Security-Policy and into an attribute of the page, so it is held to a
narrow form (docs/decisions.md, "The preview page"): an absolute ``https`` URL with a
host name, no user info, and only characters that can end neither the CSP directive
(``;``, ``,``, spaces) nor the attribute (quotes, ``<``, ``>``, backslashes).
"""

from __future__ import annotations

import re

from stowage.processing.base import Value
from stowage.processing.table import Kind, Param, TaskSpec

MAX_CSS_URL = 1024
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_CHARS = r"[A-Za-z0-9._~!$&()*+=:@%/-]"  # RFC 3986 path characters without ; and ,
_CSS_URL = re.compile(
    rf"https://(?P<host>{_LABEL}(?:\.{_LABEL})*)(?P<port>:[0-9]{{1,5}})?"
    rf"(?P<path>/{_CHARS}*)?(?P<query>\?(?:{_CHARS}|\?)*)?"
)
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def stylesheet(value: Value) -> Value:
    """``css``: an https URL of a stylesheet, in the narrow form above."""
    if not isinstance(value, str) or not value or len(value) > MAX_CSS_URL:
        raise ValueError(f"must be the https URL of a stylesheet, at most {MAX_CSS_URL} characters")
    match = _CSS_URL.fullmatch(value)
    if match is None or _BAD_PERCENT.search(value):
        raise ValueError(
            "must be an https URL with a host name and no quotes, spaces, ';', ',', '#', "
            "'<', '>' or backslashes"
        )
    port = match.group("port")
    if port is not None and not 0 < int(port[1:]) < 65536:
        raise ValueError("the port must be 1 to 65535")
    return value


def csp_source(url: str) -> str:
    """The CSP source expression of a checked ``css`` URL: its origin and path, without
    the query (CSP matches no query; a path without a final ``/`` is matched exactly)."""
    return url.split("?", 1)[0]


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "preview",
        (Param("css", stylesheet),),
        kind=Kind.REQUEST,
        doc="the viewer page of a stored file (images, text, PDFs through pdf.js)",
    ),
)
