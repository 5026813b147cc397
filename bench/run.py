"""Runs every scenario of issue 5 against Stowage, nginx and Swift on loopback, prints
one table and writes the results as JSON to bench/results/<timestamp>.json.

    scripts/bench            # full sizes (1 GiB files, 1,000 slow downloads): ~10 minutes
    scripts/bench --quick    # small sizes, one round: under two minutes (the CI smoke test)
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import documents, edge, office, peers, processing, s3, scenarios, video  # noqa: E402
from bench.scenarios import Context, Row, Sizes, ratio  # noqa: E402
from bench.servers import BenchSwift, Nginx, Stowage  # noqa: E402

SCENARIOS: list[Callable[[Context], list[Row]]] = [
    scenarios.get_small,
    scenarios.get_big,
    scenarios.get_range,
    scenarios.store_big,
    scenarios.store_small,
    scenarios.store_multipart,
    scenarios.hashes,
    scenarios.slow,
    s3.s3_provider,
    edge.get_small_cached,
    edge.get_big_through,
    edge.purge_latency,
    processing.processing,
    documents.documents,
    office.office,
    video.video_scenario,
]
SCENARIO_IDS = (
    *("1", "2", "3", "4", "5", "6", "7", "8", "9"),
    *("1c", "2c", "10", "11", "12", "12b", "13"),
)
# Names --only also takes, for the scenarios of later issues.
ALIASES = {
    "processing": "11",
    "edge": "1c,2c,10",
    "documents": "12",
    "office": "12b",
    "video": "13",
}


def run(
    quick: bool, workers: int, only: set[str] | None = None
) -> tuple[list[Row], dict[str, object]]:
    sizes = Sizes.quick() if quick else Sizes.full()
    # On the project's disk, not a tmpfs: fsync must cost what it costs in production.
    scratch = REPO / "bench" / "results"
    scratch.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="tmp-", dir=scratch))
    BenchSwift.bench_workers = workers
    stowage, nginx = Stowage(tmp, workers), Nginx(tmp, workers)
    ctx: Context | None = None
    started = time.monotonic()
    rows: list[Row] = []
    try:
        stowage.start()
        nginx.start()
        ctx = Context(tmp, sizes, stowage, nginx, _start_swift())
        scenarios.prepare(ctx)
        chosen = [
            (sid, _timed(sid, scenario))
            for sid, scenario in zip(SCENARIO_IDS, SCENARIOS, strict=True)
            if not only or sid in only
        ]
        rows = peers.run_all(ctx, chosen, peer_of, restart)
    finally:
        edge.stop_all()
        stowage.stop()
        nginx.stop()
        if ctx is not None:
            ctx.swift.stop()
        # rm is much faster than shutil.rmtree on the ~10^5 small files of scenario 5.
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    meta = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "quick": quick,
        "workers": workers,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "seconds": round(time.monotonic() - started),
        "sizes": dataclasses.asdict(sizes),
    }
    return rows, meta


def _start_swift() -> BenchSwift:
    swift = BenchSwift.start()
    assert isinstance(swift, BenchSwift)
    return swift


def _timed(sid: str, scenario: Callable[[Context], list[Row]]) -> Callable[[Context], list[Row]]:
    def timed(ctx: Context) -> list[Row]:
        begun = time.monotonic()
        rows = scenario(ctx)
        print(f"  scenario {sid} done in {time.monotonic() - begun:.0f} s", file=sys.stderr)
        return rows

    return timed


def peer_of(ctx: Context, error: BaseException) -> str:
    """The server a failure names: Stowage, nginx or Swift, else "a peer of the scenario"
    (such as Thumbor or Varnish, which their scenario starts itself)."""
    what = error.what if isinstance(error, peers.PeerFailed) else str(error)
    urls = {
        "stowage": ctx.stowage.url,
        "nginx": ctx.nginx.url,
        "swift": ctx.swift.storage_url.split("/v1/")[0],
    }
    for name, url in urls.items():
        if what == name or what.startswith(url):
            return name
    return "a peer of the scenario"


def restart(ctx: Context, peer: str) -> None:
    """Starts ``peer`` again (a scenario's own peers are started by the scenario's retry)."""
    if peer == "swift":
        ctx.swift.stop()
        ctx.swift = _start_swift()
        scenarios.prepare_swift(ctx)
    elif peer == "nginx":
        ctx.nginx.stop()
        ctx.nginx.start()
    elif peer == "stowage":
        ctx.stowage.stop()
        ctx.stowage.start()


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def table(rows: list[Row]) -> str:
    head = (
        "| # | scenario | unit | Stowage | nginx | Swift | reference | Stowage/nginx "
        "| Stowage/Swift | Stowage/ref | target | met | Stowage peak RSS MiB |"
    )
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        ref = f"{_num(r.reference)} ({r.reference_label})" if r.reference is not None else "-"
        met = {True: "yes", False: "**no**", None: ""}[r.met]
        lines.append(
            f"| {r.id} | {r.scenario} | {r.unit} | {_num(r.stowage)} | {_num(r.nginx)} "
            f"| {_num(r.swift)} | {ref} | {_x(ratio(r.stowage, r.nginx))} "
            f"| {_x(ratio(r.stowage, r.swift))} | {_x(ratio(r.stowage, r.reference))} "
            f"| {r.target} | {met} | {_num(r.peak_rss_mib)} |"
        )
    return "\n".join(lines)


def save(rows: list[Row], meta: dict[str, object], path: Path | None = None) -> Path:
    out_dir = REPO / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = path or out_dir / f"{stamp}{'-quick' if meta['quick'] else ''}.json"
    path.write_text(
        json.dumps({"meta": meta, "rows": [dataclasses.asdict(r) for r in rows]}, indent=2)
    )
    return path


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes for Stowage, nginx and Swift (default: one per core)",
    )
    parser.add_argument(
        "--only", help="comma-separated scenario numbers or names, e.g. 1,3 or processing"
    )
    parser.add_argument("--output", type=Path, help="JSON file (default bench/results/<time>.json)")
    args = parser.parse_args(argv)
    only = (
        {p for s in args.only.split(",") for p in ALIASES.get(s, s).split(",")}
        if args.only
        else None
    )
    rows, meta = run(args.quick, args.workers, only)
    print(
        f"\n{meta['date']}  commit {meta['commit']}  workers {meta['workers']}  "
        f"{meta['seconds']} s\n"
    )
    print(table(rows))
    path = save(rows, meta, args.output)
    print(f"\nresults: {path}")
    return path


if __name__ == "__main__":
    main()
