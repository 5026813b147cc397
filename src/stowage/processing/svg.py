"""SVG sources, checked and rewritten before libvips (librsvg) draws them.

An SVG is an XML document that may name other resources: ``<image href=
"http://127.0.0.1/...">``, ``file:///etc/passwd``, ``url(...)`` in CSS, ``@import``,
``<?xml-stylesheet?>``, XInclude, external entities in a DTD, and entity bombs (a
billion laughs). Here the source is read once by expat, as a stream, in the job
process, and a new document is written from what was read:

- a DTD's internal subset (``<!DOCTYPE svg [ ... ]>``) is refused, so no entity can be
  declared, internal or external; an external DTD (the ``PUBLIC "-//W3C//DTD SVG 1.1//EN"``
  line drawing tools write) is never read, and the ``<!DOCTYPE>`` is not written back; a
  reference to any entity but XML's five is refused;
- ``href`` (in any namespace: ``xlink:href``, ``href``, ``x:href``) may only be a
  ``#fragment`` of the document or a ``data:`` raster image (PNG, JPEG, GIF, WebP); so
  may every CSS ``url(...)``, in any attribute or ``<style>``; ``@import``, CSS escapes
  (``\\75rl(``) and XInclude are refused; anything else is a 422 naming it;
- scripts (``<script>``, ``on*`` attributes), comments and processing instructions
  (``<?xml-stylesheet?>``) are dropped: they draw nothing;
- depth, element count and size are bounded;
- what librsvg's drawing will cost (filters, ``<use>`` fan-out, elements, points,
  text) is gathered for the cost estimate (``svgdraw.py``);
- each ``data:`` image's size is read from its header and held to the job's pixel
  limits, and counted for the cost estimate (``svgimages.py``): librsvg decodes every
  one whole, whatever the canvas.

libvips then reads only the rewritten file, as UTF-8 with no DTD, so librsvg (libxml2)
parses exactly what expat checked: no difference between two parsers' readings can
smuggle anything past the check.
"""

from __future__ import annotations

import contextlib
import re
import xml.parsers.expat
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import IO

import pyvips

from stowage import errors
from stowage.processing import svgdraw
from stowage.processing.base import Limits
from stowage.processing.svgimages import Embedded
from stowage.processing.svgimages import Refused as Refused  # raised here, defined there

MAX_BYTES = 10 * 1024 * 1024  # librsvg's own default cap on XML, without "unlimited"
MAX_DEPTH = 256
MAX_ELEMENTS = 200_000
_CHUNK = 64 * 1024
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|jpg|gif|webp)[;,]", re.I | re.ASCII)
_URL = re.compile(r"url\s*\(\s*['\"]?\s*([^'\")\s]*)", re.IGNORECASE)
_DROPPED = {"script"}  # elements dropped with all they hold
_REFUSED = {"include": "XInclude"}  # elements refused (local names)


@dataclass
class _Rewritten:
    """What the rewrite of one SVG found: its ``data:`` images (read as it goes), and what
    its drawing costs (``svgdraw``; None until the rewrite is over)."""

    images: Embedded
    drawing: svgdraw.Drawing | None = None


#: The job's rewritten SVGs, by the file each was rewritten into.
_SAFE: ContextVar[Mapping[Path, _Rewritten]] = ContextVar("safe_svg", default=MappingProxyType({}))


def is_svg(source: Path) -> bool:
    """What libvips would open the file as (it sniffs the content, not the name)."""
    found = pyvips.vips_lib.vips_foreign_find_load(str(source).encode())
    return found != pyvips.ffi.NULL and b"Svg" in pyvips.ffi.string(found)


def is_rewritten(source: Path) -> bool:
    """Whether ``source`` is a file one of this job's SVGs was rewritten into (then, and
    only then, libvips may open an SVG: ``frames.check_raster``)."""
    return source in _SAFE.get()


def embedded(source: Path) -> Embedded | None:
    """The ``data:`` images of the SVG rewritten into ``source`` (None: no such file)."""
    found = _SAFE.get().get(source)
    return None if found is None else found.images


def drawing(source: Path) -> svgdraw.Drawing | None:
    """What librsvg's drawing of the SVG rewritten into ``source`` costs besides its
    canvas (None: no such file)."""
    found = _SAFE.get().get(source)
    return None if found is None else found.drawing


def embedded_pixels() -> Mapping[str, int]:
    """The pixels of the ``data:`` images of every SVG this job has rewritten so far,
    by libvips' loader of their format: what librsvg will decode besides the canvases."""
    found: dict[str, int] = {}
    for rewritten in _SAFE.get().values():
        for loader, pixels in rewritten.images.decoded.items():
            found[loader] = found.get(loader, 0) + pixels
    return found


@contextlib.contextmanager
def rewritten(source: Path, dest: Path, limits: Limits) -> Iterator[Path]:
    """The engine's hook where a source is opened (the main one, a watermark's): an SVG
    is checked and rewritten beside ``dest`` (removed when the job is done), its
    ``data:`` images held to ``limits``; any other source goes on as it is."""
    if not is_svg(source):
        yield source
        return
    safe = dest.with_name(dest.name + ".safe.svg")
    found = _Rewritten(Embedded.within(limits))
    # Added and taken away by name, not reset by token: a job's rewritten files (its
    # source's, its watermark's) end in any order, and none may outlive its job.
    _SAFE.set({**_SAFE.get(), safe: found})
    try:
        try:
            with source.open("rb") as read, safe.open("w", encoding="utf-8") as write:
                found.drawing = rewrite(read, write, found.images)
        except Refused as exc:
            raise errors.InvalidImage(f"the SVG cannot be drawn: {exc}") from exc
        yield safe
    finally:
        _SAFE.set({path: kept for path, kept in _SAFE.get().items() if path != safe})
        safe.unlink(missing_ok=True)


def rewrite(read: IO[bytes], write: IO[str], images: Embedded | None = None) -> svgdraw.Drawing:
    """Reads the SVG from ``read`` and writes the checked document to ``write``, its
    ``data:`` images read into ``images`` (held to no pixel limit when None);
    ``Refused`` with the reason otherwise, ``errors.ImageTooLarge`` past a limit. Answers
    what librsvg's drawing of it will cost (``svgdraw``: priced at the size drawn)."""
    writer = _Writer(write, Embedded() if images is None else images)
    parser = xml.parsers.expat.ParserCreate()
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.ordered_attributes = True
    parser.StartDoctypeDeclHandler = _doctype
    parser.EntityDeclHandler = _no_entity
    parser.ExternalEntityRefHandler = _no_entity
    parser.SkippedEntityHandler = _no_entity
    parser.StartElementHandler = writer.start
    parser.EndElementHandler = writer.end
    parser.CharacterDataHandler = writer.text
    write.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    size = 0
    try:
        while chunk := read.read(_CHUNK):
            size += len(chunk)
            if size > MAX_BYTES:
                raise Refused(f"the SVG is over {MAX_BYTES} bytes")
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except xml.parsers.expat.ExpatError as exc:
        reason = xml.parsers.expat.errors.messages[exc.code]
        raise Refused(f"not well-formed XML ({reason})") from None
    if not writer.saw_root:
        raise Refused("no <svg> element")
    writer.drawing.cost()  # at the document's size: a drawing's reading ends here
    return writer.drawing


def _doctype(name: str, system: str | None, public: str | None, internal: int) -> None:
    if internal:
        raise Refused("a DTD with declarations (<!DOCTYPE ... [ ]>) is not allowed in an SVG")


def _no_entity(*_: object) -> int:
    raise Refused("entities are not allowed in an SVG")


def _named(attributes: list[str]) -> dict[str, str]:
    """Attributes by their local name (``xlink:href`` as ``href``), the first kept."""
    named: dict[str, str] = {}
    for name, value in zip(attributes[::2], attributes[1::2], strict=True):
        named.setdefault(name.rsplit(":", 1)[-1], value)
    return named


def _local(name: str) -> str:
    return name.rsplit(":", 1)[-1].lower()


def check_reference(target: str, where: str, images: Embedded) -> None:
    """``target`` (an href or a CSS url) may only point into the document or be an
    inline raster image, which is read into ``images``. (librsvg decodes an image named
    by an ``href``; one in a CSS ``url()`` only as an external resource, but it is held
    to the same limits rather than trusted to be left alone.)"""
    value = target.strip()
    if value.startswith("#"):
        return
    if _DATA_IMAGE.match(value):
        images.add(value, where)
        return
    shown = value[:80] or "(empty)"
    raise Refused(
        f"{where} refers to {shown!r}: only '#fragment' and data: PNG, JPEG, GIF or WebP"
        " images are drawn"
    )


def check_css(text: str, where: str, images: Embedded) -> None:
    if "(" not in text and "@" not in text and "\\" not in text:
        return  # nothing to look at (most attributes: read once per element)
    lowered = text.lower()
    if "\\" in text:
        raise Refused(f"CSS escapes are not allowed ({where})")
    if "@import" in lowered:
        raise Refused(f"@import is not allowed ({where})")
    for match in _URL.finditer(text):
        check_reference(match.group(1), where, images)


class _Writer:
    """expat's events written back as a document, checked on the way."""

    def __init__(self, out: IO[str], images: Embedded) -> None:
        # Imported here: xml.sax.saxutils brings urllib and http.client, a sixth of a job
        # process's start, into every job, for the few that rewrite an SVG.
        from xml.sax.saxutils import escape, quoteattr

        self._escape, self._quoteattr = escape, quoteattr
        self._out = out
        self._images = images
        self._open: list[str] = []  # the names of the open elements, written or not
        self._dropping = 0  # depth inside a dropped element (a script); 0: writing
        self._elements = 0
        self._style: list[str] | None = None  # the text of an open <style>, checked whole
        self.saw_root = False
        self.drawing = svgdraw.Drawing()  # what librsvg will draw, for the estimate

    def start(self, name: str, attributes: list[str]) -> None:
        self._elements += 1
        if self._elements > MAX_ELEMENTS or len(self._open) >= MAX_DEPTH:
            raise Refused(f"more than {MAX_ELEMENTS} elements or {MAX_DEPTH} levels deep")
        local = _local(name)
        if not self._open and local != "svg":
            raise Refused(f"the document is a <{name[:40]}>, not an <svg>")
        self.saw_root = True
        if self._style is not None:
            raise Refused("a <style> element holds only text")
        self._open.append(name)
        if self._dropping or local in _DROPPED:
            self._dropping += 1
            return
        if local in _REFUSED:
            raise Refused(f"{_REFUSED[local]} is not allowed")
        kept = "".join(
            self._attribute(n, v) for n, v in zip(attributes[::2], attributes[1::2], strict=True)
        )
        self._out.write(f"<{name}{kept}>")
        self.drawing.start(local, _named(attributes))
        if local == "style":
            self._style = []

    def _attribute(self, name: str, value: str) -> str:
        local = _local(name)
        if local.startswith("on"):  # event handlers: scripts, which draw nothing
            return ""
        if local == "href" or local == "src":
            check_reference(value, f"the attribute {name[:40]}", self._images)
        check_css(value, f"the attribute {name[:40]}", self._images)
        return f" {name}={self._quoteattr(value)}"

    def end(self, name: str) -> None:
        self._open.pop()
        if self._dropping:
            self._dropping -= 1
            return
        if self._style is not None:  # the text may come in many pieces: checked whole
            css, self._style = "".join(self._style), None
            check_css(css, "a <style> element", self._images)
            self.drawing.style(css)
            self._out.write(self._escape(css))
        self._out.write(f"</{name}>")
        self.drawing.end()

    def text(self, data: str) -> None:
        if self._dropping:
            return
        if self._style is not None:
            self._style.append(data)
            return
        self.drawing.text(data)
        self._out.write(self._escape(data))
