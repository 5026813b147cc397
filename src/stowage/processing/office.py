"""A small pool of warm LibreOffice converters (``office_driver.py``), each in the
sandbox (``sandbox.py``: no network, an address-space and file-size limit, its own
session) with its own folder as working directory, HOME, TMPDIR and profile.

A cold ``soffice`` takes seconds to start; a warm one converts a small document in a
fraction of that. At most ``size`` conversions run at once, one per converter. A job's
input is copied into its converter's folder and its result is written there, so the
converter never needs a path outside it. A converter past a job's deadline is killed
with everything it started (its session) and a new one takes its place on the next
job; the other converters' jobs go on. ``prewarm`` starts one converter in the
background when the process starts (``office_prewarm``), so that its first document does
not wait for LibreOffice's start.

Requests are admitted in a lane of their own (``lanes.Lane``, as the job pool's): at most
``WAITING_PER_CONVERTER`` a converter, converting or waiting; one more is refused at once
with 503 and ``Retry-After`` the lane's expected wait, from how many wait and how long
its recent conversions took (it was always 1, also behind eight conversions of seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.config import Settings
from stowage.processing import sandbox
from stowage.processing.lanes import Lane
from stowage.processing.officeformats import Kind, target

PYTHON = "/usr/bin/python3"  # Debian's, with python3-uno (the venv's has no uno)
DRIVER = Path(__file__).with_name("office_driver.py")
#: What a converter reads outside /usr and its folder: fontconfig's and LibreOffice's
#: configuration, the dynamic linker's cache.
READABLE = ("/etc/fonts", "/etc/libreoffice", "/etc/ld.so.cache")
_STARTUP_SECONDS = 90.0
WAITING_PER_CONVERTER = 8  # requests admitted per converter (one converting, the rest waiting)
_REPLY_BYTES = 64 * 1024
STALE_SECONDS = 3600.0  # a converter's folder this old, of a process gone, is swept
log = logging.getLogger("stowage.processing")


class Converters:
    def __init__(
        self, root: Path, size: int, seconds: float, caps: sandbox.Caps, driver: Path = DRIVER
    ) -> None:
        self.root = root
        self.driver = driver
        self.size = size
        self.seconds = seconds
        self.caps = caps
        self._slots = asyncio.Semaphore(max(1, size))
        self._idle: list[_Converter] = []
        self._all: set[_Converter] = set()
        # Its own among the pools of one process: a node's API and CDN apps (and nodes
        # run in one process) share the data folder, and each counted from 1: one pool's
        # start wiped a folder another's LibreOffice was writing in (FileExistsError).
        self._names = itertools.count(1)
        self._tag = secrets.token_hex(4)
        # Converting or waiting for a converter; its recent run time is a conversion's.
        self._lane = Lane("office", size, max(1, size) * WAITING_PER_CONVERTER)
        self._warming: asyncio.Task[None] | None = None
        self._closed = False

    def available(self) -> bool:
        if self.size <= 0:
            return False
        return sandbox.missing(("soffice", PYTHON), self.caps) is None

    def prewarm(self) -> None:
        """One converter started in the background, never waited for: not at all when
        documents are off here or LibreOffice is missing; a failure is logged, and the
        first document starts its converter as it would have."""
        if self._warming is None and self.size > 0:
            self._warming = asyncio.ensure_future(self._prewarm())

    async def _prewarm(self) -> None:
        try:
            if not await asyncio.to_thread(self.available):
                return
            async with self._slots:  # a job meanwhile waits for this one, not a second
                if not self._all:
                    self._idle.append(await self._start())
        except Exception:
            log.warning("could not start a LibreOffice converter ahead", exc_info=True)

    async def convert(self, source: Path, kind: Kind, fmt: str, dest: Path) -> None:
        """``source`` (a file of ``kind``) converted to ``fmt`` into ``dest``."""
        if not self.available():
            raise errors.DocumentsUnavailable()
        export, options = target(kind, fmt)
        self._lane.admit(self.size)  # a 503 at once, not a queue unbounded
        try:
            async with self._slots:
                await self._convert(source, kind, (export, options), fmt, dest)
        finally:
            self._lane.leave()

    async def _convert(
        self, source: Path, kind: Kind, export: tuple[str, str], fmt: str, dest: Path
    ) -> None:
        converter = await self._ready()  # a converter's start is not a conversion's time
        began = time.monotonic()
        try:
            await converter.convert(source, kind, *export, fmt, dest, self.seconds)
        except _Refused:
            self._idle.append(converter)  # the document's fault; the converter is fine
            raise
        except BaseException:  # past the deadline, ended, or the server stopping
            await self._stop(converter)
            raise
        finally:
            self._lane.ran(time.monotonic() - began)
        self._idle.append(converter)

    async def _ready(self) -> _Converter:
        """An idle converter whose folder is still there, else a new one: a folder removed
        from outside (a cleaner of temporary files; a node sharing the data folder sweeping
        old folders) would fail the converter's next document."""
        while self._idle:
            converter = self._idle.pop()
            if converter.folder.is_dir():
                return converter
            await self._stop(converter)
        return await self._start()

    async def _start(self) -> _Converter:
        # Named by this process: the worker processes of a node share the data folder.
        folder = self.root / f"{os.getpid()}-{self._tag}-{next(self._names)}"
        if self._closed:  # a conversion given its slot after close(): no LibreOffice outlives it
            raise errors.ShuttingDown()
        if not self._all:
            _sweep(self.root)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            converter = await _Converter.start(folder, self.caps, self.driver)
        except BaseException:  # cancelled or failed before a converter owned the folder
            shutil.rmtree(folder, ignore_errors=True)
            raise
        if self._closed:
            await converter.kill()
            raise errors.ShuttingDown()
        self._all.add(converter)
        return converter

    async def _stop(self, converter: _Converter) -> None:
        self._all.discard(converter)
        with contextlib.suppress(ValueError):
            self._idle.remove(converter)
        await converter.kill()

    async def close(self) -> None:
        self._closed = True
        if self._warming is not None:
            self._warming.cancel()  # a converter half started is killed (``start``)
            with contextlib.suppress(asyncio.CancelledError):
                await self._warming
        for converter in list(self._all):
            await self._stop(converter)


def _sweep(root: Path) -> None:
    """Folders of converters whose process is gone (a crash, a kill), and old: each
    conversion makes its ``job`` folder anew, so a folder in use is young, and the pids
    of another node sharing the data folder are not this machine's."""
    stale = time.time() - STALE_SECONDS
    for folder in root.glob("*-*") if root.is_dir() else []:
        pid = folder.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                if folder.stat().st_mtime < stale:
                    shutil.rmtree(folder, ignore_errors=True)


class _Refused(errors.InvalidDocument):
    """LibreOffice refused the document and goes on with the next."""


class _Converter:
    def __init__(self, proc: asyncio.subprocess.Process, folder: Path) -> None:
        self.proc = proc
        self.folder = folder

    @classmethod
    async def start(cls, folder: Path, caps: sandbox.Caps, driver: Path) -> _Converter:
        proc = await sandbox.spawn(
            *sandbox.prefix(caps, folder),
            PYTHON,
            str(driver),
            str(folder),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=_REPLY_BYTES,
            **sandbox.spawn_options(folder),
        )
        converter = cls(proc, folder)
        try:
            async with asyncio.timeout(_STARTUP_SECONDS):
                ready = await converter._reply()
        except errors.InvalidDocument as exc:  # ended before any document: the node's fault
            await converter.kill()
            raise RuntimeError(f"LibreOffice did not start: {exc}") from exc
        except BaseException:
            await converter.kill()
            raise
        if not ready.get("ready"):
            await converter.kill()
            raise RuntimeError("LibreOffice did not start")  # the node's fault: a 500
        return converter

    async def convert(
        self,
        source: Path,
        kind: Kind,
        export: str,
        options: str,
        fmt: str,
        dest: Path,
        seconds: float,
    ) -> None:
        jobs = self.folder / "job"
        shutil.rmtree(jobs, ignore_errors=True)
        jobs.mkdir()
        given, made = jobs / f"input.{kind.extension}", jobs / f"output.{fmt}"
        await asyncio.to_thread(shutil.copyfile, source, given)
        order = {
            "source": str(given),
            "dest": str(made),
            "filter": export,
            "options": options,
            "load_filter": kind.load_filter,
            "load_options": kind.load_options,
            "service": kind.family.service,
            "family": kind.family.name,
        }
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(order) + "\n").encode())
            await self.proc.stdin.drain()
            async with asyncio.timeout(seconds):
                reply = await self._reply()
        except TimeoutError as exc:
            raise errors.ProcessingTimeout(
                f"the document's conversion took longer than {seconds:g} s", seconds=seconds
            ) from exc
        except ConnectionError as exc:
            raise errors.InvalidDocument("the document cannot be converted") from exc
        if "error" in reply or not made.is_file() or made.stat().st_size == 0:
            why = str(reply.get("error") or "no output").replace(str(jobs) + "/", "")
            raise _Refused(f"the document cannot be converted: {why}")
        await asyncio.to_thread(shutil.move, made, dest)
        shutil.rmtree(jobs, ignore_errors=True)

    async def _reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:  # the converter ended: LibreOffice crashed or hit its memory limit
            await self.proc.wait()
            raise errors.InvalidDocument(
                f"the document cannot be converted: its converter ended ({self.proc.returncode})"
            )
        found = json.loads(line)
        assert isinstance(found, dict)
        return found

    async def kill(self) -> None:
        await sandbox.reap(self.proc)
        shutil.rmtree(self.folder, ignore_errors=True)


def converters_for(settings: Settings) -> Converters:
    caps = sandbox.Caps(
        memory=settings.office_job_memory,
        output_bytes=settings.office_max_output_bytes,
        readable=converters_caps(),
    )
    root = settings.data_dir / "office"
    return Converters(root, settings.office_converters, settings.office_job_seconds, caps)


def converters_caps() -> tuple[str, ...]:
    """What a converter may read outside /usr and its folder."""
    return (*READABLE, str(DRIVER))
