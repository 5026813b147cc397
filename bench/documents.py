"""Scenario 12 (issue 26): documents on the CDN.

PDF page -> 300-px PNG thumbnail, cold (a page not rendered before, each request),
Stowage's ``output=format:png,page:N/resize=width:300,height:300`` against poppler's
``pdftoppm -png -scale-to 300 -f N -l N`` run once per page on the same file, both with
as many requests (or processes) at once as the machine has cores. Peak RSS of the
server and of a job process while it runs.

Alone: ``.venv/bin/python -m bench.documents`` (starts its own Stowage; no nginx, Swift
or Thumbor needed); in the full run: ``scripts/bench --only documents``.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp

from bench import images
from bench.scenarios import Context, Row, Sizes, _peak, _stowage_store, alternate, median
from bench.servers import Stowage, cpu_seconds

SIDE = 300
PAGES = 24
CONCURRENCY = 2 * (os.cpu_count() or 1)  # both kept busy while one waits for its disk


def sample_pdf(path: Path, pages: int = PAGES) -> Path:
    """A text-and-vector document: each page has 50 lines of Helvetica and a few
    filled shapes, as a typical report page (no embedded images)."""
    objects: list[bytes] = [b"", b"", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for number in range(1, pages + 1):
        lines = b"".join(
            b"BT /F1 10 Tf 56 %d Td (Page %d, line %d: the quick brown fox jumps over "
            b"the lazy dog 0123456789) Tj ET\n" % (740 - 13 * i, number, i)
            for i in range(50)
        )
        shapes = b"".join(
            b"%.2f %.2f %.2f rg %d %d 120 60 re f\n" % (i / 5, 1 - i / 5, 0.5, 60 + 90 * i, 40)
            for i in range(5)
        )
        content = shapes + lines
        kids.append(b"%d 0 R" % (len(objects) + 1))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>" % (len(objects) + 2)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), pages)
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return path


def chain(page: int) -> str:
    return f"output=format:png,page:{page}/resize=width:{SIDE},height:{SIDE}"


async def _fetch_all(urls: list[str]) -> float:
    """Every URL once, CONCURRENCY at a time; pages per second."""
    queue = list(reversed(urls))
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def worker() -> None:
            while queue:
                url = queue.pop()
                async with http.get(url) as resp:
                    body = await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"{url}: {resp.status} {body[:200]!r}")

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return len(urls) / (time.perf_counter() - started)


def pdftoppm(source: Path, out: Path) -> float:
    """``pdftoppm`` once per page, CONCURRENCY processes at a time; pages per second."""

    def one(page: int) -> None:
        prefix = out / f"p{page}"
        argv = ["pdftoppm", "-png", "-scale-to", str(SIDE), "-f", str(page), "-l", str(page)]
        subprocess.run([*argv, "-singlefile", str(source), str(prefix)], check=True)

    started = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(one, range(1, PAGES + 1)))
    return PAGES / (time.perf_counter() - started)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check(stowage: Stowage, handle: str, out: Path) -> None:
    """Both make the same thumbnail: 232 x 300 px PNGs of page 1."""

    async def get() -> bytes:
        url = f"http://127.0.0.1:{stowage.cdn_port}/{chain(1)}/{handle}"
        async with aiohttp.ClientSession() as http, http.get(url) as resp:
            assert resp.status == 200, await resp.read()
            return await resp.read()

    width, height, loader = images.geometry(asyncio.run(get()))
    assert (width, height) == (232, SIDE) and loader.startswith("png"), (width, height, loader)


def documents(ctx: Context) -> list[Row]:
    work = ctx.tmp / "documents"
    work.mkdir(parents=True, exist_ok=True)
    source = sample_pdf(work / "report.pdf")
    rounds = max(1, ctx.sizes.rounds)
    handles = [_stowage_store(ctx, source) for _ in range(rounds + 1)]  # each run: new ones
    check(ctx.stowage, handles[0], work)
    used = iter(handles[1:])
    base = f"http://127.0.0.1:{ctx.stowage.cdn_port}"
    tool = shutil.which("pdftoppm")
    if tool is None:
        raise RuntimeError("pdftoppm is missing: scripts/setup.d/70-bench.sh installs it")
    version = subprocess.run([tool, "-v"], capture_output=True, text=True).stderr.split("\n")[0]

    cpu_ms: dict[str, list[float]] = {"stowage": [], "pdftoppm": []}

    def stowage_run() -> float:
        handle = next(used)
        urls = [f"{base}/{chain(p)}/{handle}" for p in range(1, PAGES + 1)]
        before = cpu_seconds(ctx.stowage.pids())
        rate = asyncio.run(_fetch_all(urls))
        cpu_ms["stowage"].append((cpu_seconds(ctx.stowage.pids()) - before) * 1000 / PAGES)
        return rate

    def pdftoppm_run() -> float:
        before = _children_cpu()
        rate = pdftoppm(source, work)
        cpu_ms["pdftoppm"].append((_children_cpu() - before) * 1000 / PAGES)
        return rate

    def measure() -> Row:
        rates = alternate(rounds, {"stowage": stowage_run, "pdftoppm": pdftoppm_run})
        s, p = median(rates["stowage"]), median(rates["pdftoppm"])
        return Row(
            "12",
            f"documents: PDF page -> {SIDE} px PNG thumbnail, cold, {CONCURRENCY} at once",
            "pages/s",
            s,
            reference=p,
            reference_label=f"{version}, one process per page",
            target=">= 1.0x pdftoppm",
            met=s >= p,
            extra={"runs": rates, "pages": PAGES},
        )

    def cpu_row() -> Row:
        return Row(
            "12",
            "  CPU time per page (Stowage: all its processes; lower is better)",
            "ms",
            median(cpu_ms["stowage"]),
            reference=median(cpu_ms["pdftoppm"]),
            reference_label="pdftoppm, its processes",
            extra={"runs": cpu_ms},
        )

    return [_peak(ctx, measure), cpu_row()]


def main() -> None:
    """The scenario alone, against a Stowage of its own."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-documents-"))
    stowage = Stowage(tmp, os.cpu_count() or 2)  # as scripts/bench runs it
    try:
        stowage.start()
        ctx = Context(tmp, Sizes.quick(), stowage, None, None)  # type: ignore[arg-type]
        ctx.sizes.rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
        ctx.key, ctx.secret = stowage.create_app()
        for row in documents(ctx):
            ratio = row.stowage / row.reference if row.stowage and row.reference else 0
            print(
                f"{row.scenario}: Stowage {row.stowage:.1f} {row.unit}, {row.reference_label} "
                f"{row.reference:.1f} {row.unit}: {ratio:.2f}x {row.target}; "
                f"peak RSS {row.peak_rss_mib} MiB; runs {row.extra['runs']}"
            )
    finally:
        stowage.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
