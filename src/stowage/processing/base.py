"""The processing engine's interface: a parsed chain of tasks in, a rendered file out.

A ``Chain`` is what a URL asked for, already validated and normalised (``chain.parse``).
An ``Engine`` renders one chain from a source file into a destination file on the
calling thread; it never touches storage or the network, so it can run in a job process
of its own (``worker.py``), to which a ``Job`` says what to render. Everything around it
(limits, the job pool, the derivative cache, authorisation) lives in the package's other
modules.

Contract of ``Engine.render`` (checked by ``tests/processing/test_engine.py``):

- the header is read and checked against ``Limits`` before any pixel is decoded; an
  image with too many pixels raises ``errors.ImageTooLarge``;
- a file that is no image raises ``errors.NotAnImage``; a truncated or corrupt one
  ``errors.InvalidImage``; a result wider or taller than allowed ``errors.ImageTooLarge``;
- past ``Limits.seconds`` the work is stopped and ``errors.ProcessingTimeout`` raised;
- on success ``dest`` holds the whole result in ``chain.output.format``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

Value = int | float | bool | str | tuple["Value", ...]


@dataclass(frozen=True)
class Task:
    name: str
    options: tuple[tuple[str, Value], ...] = ()  # sorted by option name

    def get(self, name: str, default: Value | None = None) -> Value | None:
        for key, value in self.options:
            if key == name:
                return value
        return default

    def key(self) -> str:
        if not self.options:
            return self.name
        return self.name + "=" + ",".join(f"{k}:{_text(v)}" for k, v in self.options)


@dataclass(frozen=True)
class Output:
    """What the result is: image format name as libvips saves it, or ``json``."""

    format: str
    mimetype: str
    extension: str


@dataclass(frozen=True)
class Chain:
    tasks: tuple[Task, ...]  # image tasks, left to right (no security, cache or store)
    store: Task | None = None  # a trailing store task: the result becomes a new file
    output_format: str | None = None  # asked for by an output task, else the input's

    def key(self) -> str:
        """The normalised chain: one string for every spelling of the same request."""
        return self._key

    @functools.cached_property
    def _key(self) -> str:  # parsed chains are kept (chain._parse): a hit asks it twice
        return "/".join(task.key() for task in self.tasks)

    @property
    def wants_size(self) -> bool:
        return bool(self.tasks) and self.tasks[-1].name == "imagesize"

    def merged(self, name: str) -> dict[str, Value]:
        """The options of every ``name`` task of the chain, a later one's winning."""
        found: dict[str, Value] = {}
        for task in self.tasks:
            if task.name == name:
                found.update(task.options)
        return found

    @property
    def quality(self) -> Value | None:
        """The quality the save is asked for: ``output``'s, else ``pjpg``'s, else the
        last ``quality`` task's value (an int, ``"input"`` until ``jpegquality`` reads it,
        or None: the saver's default)."""
        value = next((t.get("value") for t in reversed(self.tasks) if t.name == "quality"), None)
        value = self.merged("pjpg").get("quality", value)
        return self.merged("output").get("quality", value)

    def makes_cmyk(self, fmt: str, cmyk_source: bool) -> bool:
        """Whether the result is saved in CMYK: ``output=colorspace:cmyk``, or ``input``
        for a CMYK source, and a format that holds it (JPEG, TIFF); RGB stays RGB."""
        space = self.merged("output").get("colorspace")
        asked = space == "cmyk" or (space == "input" and cmyk_source)
        return asked and fmt in ("jpeg", "tiff")

    @property
    def compresses(self) -> bool:
        """``compress``, or ``output=compress:true``: the savers' most compact settings."""
        return bool(self.merged("output").get("compress")) or any(
            t.name == "compress" for t in self.tasks
        )


@dataclass(frozen=True)
class Limits:
    max_input_pixels: int  # of the page or frame decoded
    max_input_bytes: int
    max_output_dimension: int
    seconds: float
    max_frames: int = 1000  # frames decoded (an animation's, or up to a GIF page)
    max_total_pixels: int = 400_000_000  # of all the frames decoded
    max_cost: float = math.inf  # estimated seconds of work (cost.py); beyond: refused
    big_cost: float = math.inf  # estimated seconds beyond which a job is a big one
    #: The largest result in bytes (``processing_max_output_bytes``): the save stops there.
    max_output_bytes: int = 100 * 1024 * 1024


@dataclass
class Rendered:
    output: Output
    width: int = 0
    height: int = 0
    extra: dict[str, str] = field(default_factory=dict)


class Engine(Protocol):
    def render(
        self, source: Path, chain: Chain, output: Output, dest: Path, limits: Limits
    ) -> Rendered: ...


@dataclass(frozen=True)
class Job:
    """One render, as the job pool sends it to a job process."""

    source: Path
    chain: Chain
    output: Output
    dest: Path
    limits: Limits
    #: Other sources the chain reads (watermark, collage, animate): handle and path, in
    #: the URL's order, each authorised and read by the service like ``source``.
    sources: tuple[tuple[str, Path], ...] = ()
    #: The first ``listed`` of ``sources`` are the files of a ``[h1,h2]`` source (an
    #: animation's frames); the others are files a task names (a watermark's).
    listed: int = 0
    #: The main source's identity for the pool (a handle and its version, a URL): one that
    #: overran a small job's time is run as a big job the next time (``pool.py``).
    origin: str = ""

    def render_with(self, engine: Engine) -> Rendered:
        return engine.render(self.source, self.chain, self.output, self.dest, self.limits)


class BigJob(Exception):
    """Not an answer: the job's estimated cost is above ``Limits.big_cost``; the pool runs
    it again in a slot for big jobs (``pool.py``) with that limit lifted."""

    #: Seconds its job process took to find it big (set by the pool; a process's start not
    #: counted): long for an SVG parsed to be estimated, milliseconds for a raster's header.
    held: float = 0.0


def _text(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ",".join(_text(v) for v in value) + "]"
    if isinstance(value, str) and any(c in value for c in ',/[]"'):
        return '"' + value + '"'
    return str(value)
