"""Scenario 12b (issue 26): Office documents to PDF.

A 10-page DOCX -> PDF: Stowage's ``output=format:pdf`` (warm LibreOffice converters in
the sandbox; each request a document not converted before, so nothing is cached)
against one-shot ``soffice --headless --convert-to pdf`` per file (a cold LibreOffice
each, with a profile of its own so that two can run at once), both with ``CONCURRENCY``
at once, in the same run. Files per second, Stowage's p99 latency and peak RSS, and the
p99 of the node's first documents after its start (its converters' start included:
``office_prewarm`` starts one per process ahead).

Alone: ``.venv/bin/python -m bench.office [ROUNDS]``; in the full run:
``scripts/bench --only office``.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from xml.sax.saxutils import escape

import aiohttp

from bench.scenarios import Context, Row, Sizes, _peak, _stowage_store, alternate, median
from bench.servers import Stowage
from tests.servers.procs import command_line

PAGES = 10
FILES = 6  # per round and side
CONCURRENCY = 2  # Stowage's default office_converters
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" '
    'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?><Relationships '
    'xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/'
    '2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'
)


def sample_docx(path: Path, seed: int, pages: int = PAGES) -> Path:
    """A report of ``pages`` pages: a heading and 40 lines of text on each (``seed``
    makes each file's bytes its own, so no result is cached)."""
    body = []
    for page in range(1, pages + 1):
        brk = '<w:r><w:br w:type="page"/></w:r>' if page > 1 else ""
        body.append(f"<w:p>{brk}<w:r><w:rPr><w:b/></w:rPr><w:t>Section {page}</w:t></w:r></w:p>")
        for line in range(40):
            text = escape(f"File {seed}, page {page}, line {line}: the quick brown fox jumps.")
            body.append(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>")
    document = (
        f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{_W}">'
        f"<w:body>{''.join(body)}</w:body></w:document>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as made:
        made.writestr("[Content_Types].xml", _TYPES)
        made.writestr("_rels/.rels", _RELS)
        made.writestr("word/document.xml", document)
    path.write_bytes(out.getvalue())
    return path


async def _fetch_all(urls: list[str], latencies: list[float], connections: int = 0) -> float:
    queue = list(reversed(urls))
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as http:

        async def worker() -> None:
            while queue:
                url = queue.pop()
                started = time.perf_counter()
                async with http.get(url) as resp:
                    body = await resp.read()
                    if resp.status != 200 or not body.startswith(b"%PDF-"):
                        raise RuntimeError(f"{url}: {resp.status} {body[:200]!r}")
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections or CONCURRENCY)))
        return len(urls) / (time.perf_counter() - started)


def soffice(sources: list[Path], out: Path) -> float:
    """One cold ``soffice --convert-to pdf`` per file, CONCURRENCY at a time; files/s."""

    def one(source: Path) -> None:
        profile = out / f"profile-{source.stem}"
        argv = ["soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless"]
        argv += ["--convert-to", "pdf", "--outdir", str(out), str(source)]
        subprocess.run(argv, check=True, capture_output=True, timeout=300)
        if not (out / f"{source.stem}.pdf").is_file():
            raise RuntimeError(f"soffice made no PDF of {source.name}")
        shutil.rmtree(profile, ignore_errors=True)

    started = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(one, sources))
    return len(sources) / (time.perf_counter() - started)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] if ordered else 0.0


def office(ctx: Context) -> list[Row]:
    work = ctx.tmp / "office"
    work.mkdir(parents=True, exist_ok=True)
    if shutil.which("soffice") is None:
        raise RuntimeError("soffice is missing: scripts/setup.d/79-office.sh installs it")
    rounds = max(1, ctx.sizes.rounds)
    made = iter(range(10**6))
    base = f"http://127.0.0.1:{ctx.stowage.cdn_port}"
    latencies: list[float] = []
    count = FILES if rounds > 1 else 2  # --quick (the CI's smoke run): a sample, not a number

    def files(tag: str) -> list[Path]:
        return [sample_docx(work / f"{tag}{n}.docx", n) for n in (next(made) for _ in range(count))]

    def stowage_run() -> float:
        handles = [_stowage_store(ctx, path) for path in files("s")]
        urls = [f"{base}/output=format:pdf/{handle}" for handle in handles]
        return asyncio.run(_fetch_all(urls, latencies))

    def soffice_run() -> float:
        return soffice(files("c"), work)

    warm = [f"{base}/output=format:pdf/{_stowage_store(ctx, path)}" for path in files("w")]
    first: list[float] = []  # the node's first documents: its converters' start included
    asyncio.run(_fetch_all(warm, first))  # the converters started, as on a serving node
    started = _start_every_converter(ctx, files) if rounds > 1 else _converters(ctx.stowage)

    def measure() -> Row:
        rates = alternate(rounds, {"stowage": stowage_run, "soffice": soffice_run})
        s, c = median(rates["stowage"]), median(rates["soffice"])
        return Row(
            "12b",
            f"documents: DOCX ({PAGES} pages) -> PDF, {CONCURRENCY} at once",
            "files/s",
            s,
            reference=c,
            reference_label="soffice --headless --convert-to pdf, one process per file",
            target=">= 3.0x soffice",
            met=s >= 3 * c,
            extra={
                "runs": rates,
                "p99_seconds": round(p99(latencies), 3),
                "first_p99_seconds": round(p99(first), 3),
                "files": count,
                "converters_started": started,
            },
        )

    return [_peak(ctx, measure)]


def _start_every_converter(ctx: Context, files: Callable[[str], list[Path]]) -> int:
    """More documents until each server process has started all its converters, as on a
    node that has served a while; how many run then. Each process keeps
    ``office_converters`` (2) of its own and starts one ahead; which process a connection
    reaches is the kernel's choice, so a process may not have met two documents at once
    in the warm-up, and start its second converter (about a second) in a measured round."""
    base = f"http://127.0.0.1:{ctx.stowage.cdn_port}"
    wanted = ctx.stowage.workers * CONCURRENCY
    for _ in range(8):
        if _converters(ctx.stowage) >= wanted:
            break
        urls = [f"{base}/output=format:pdf/{_stowage_store(ctx, p)}" for p in files("w")]
        asyncio.run(_fetch_all(urls, [], 2 * CONCURRENCY))
    return _converters(ctx.stowage)


def _converters(stowage: Stowage) -> int:
    return sum("soffice.bin" in command_line(pid) for pid in stowage.pids())


def main() -> None:
    """The scenario alone, against a Stowage of its own."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-office-"))
    stowage = Stowage(tmp, os.cpu_count() or 2)
    try:
        stowage.start()
        ctx = Context(tmp, Sizes.quick(), stowage, None, None)  # type: ignore[arg-type]
        ctx.sizes.rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
        ctx.key, ctx.secret = stowage.create_app()
        for row in office(ctx):
            ratio = row.stowage / row.reference if row.stowage and row.reference else 0
            print(
                f"{row.id}: Stowage {row.stowage:.2f} {row.unit}, {row.reference_label} "
                f"{row.reference:.2f} {row.unit}: {ratio:.2f}x ({row.target}); "
                f"p99 {row.extra['p99_seconds']} s; first documents' p99 "
                f"{row.extra['first_p99_seconds']} s; converters "
                f"{row.extra['converters_started']}; peak RSS {row.peak_rss_mib} MiB; "
                f"runs {row.extra['runs']}"
            )
    finally:
        stowage.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
