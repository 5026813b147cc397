"""Smoke test of the benchmark (scripts/bench --quick): it runs, starts its servers and
produces a row for every scenario (issues 5, 15, 16 and 17), each with a Stowage figure
and its peers'. It does not assert speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import processing_tasks

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = {
    *("1", "2", "3", "4", "5", "6", "7", "8", "9"),
    *("1c", "2c", "10", "11", "12", "12b", "13"),
}


@pytest.mark.timeout(1000)  # the benchmark run is bounded at 900 s
def test_quick_benchmark_produces_every_scenario(tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--quick", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=900,  # every scenario, peers included, on a machine running other tests
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    rows = result["rows"]
    assert {row["id"] for row in rows} == SCENARIOS
    for row in rows:
        assert row["stowage"] is not None, row
    by_id = {row["id"]: row for row in rows if not row["scenario"].startswith(" ")}
    for sid in ("1", "2", "3", "4", "5", "6"):  # the peers were measured too
        assert by_id[sid]["nginx"] and by_id[sid]["swift"], by_id[sid]
    assert by_id["7"]["reference"], by_id["7"]  # the coreutils tools
    assert by_id["4"]["reference"], by_id["4"]  # the disk's fsync ceiling
    processing = [row for row in rows if row["id"] == "11"]
    # cold, its CPU, warm, 100-megapixel, then a row per task shared with Thumbor, their
    # geometric mean, the warm auto_image row, and last the floor.
    tasks = processing[4:-3]
    mean, auto, floor = processing[-3], processing[-2], processing[-1]
    assert len(tasks) == len(processing_tasks.PAIRS), processing
    assert all(row["stowage"] > 0 and row["reference"] > 0 for row in tasks), tasks
    assert mean["scenario"].strip().startswith("geometric mean"), mean
    assert mean["stowage"] > 0 and mean["extra"]["ratios"], mean
    assert "auto_image" in auto["scenario"] and auto["stowage"] > 0 and auto["reference"], auto
    assert processing[0]["reference"] > 0, processing[0]  # Thumbor's cold rate
    assert processing[0]["reference_label"].startswith("Thumbor"), processing[0]
    assert processing[1]["stowage"] > 0 and processing[1]["reference"] > 0, processing[1]
    assert processing[3]["extra"]["thumbor_status"] in (200, 400), processing[3]
    assert floor["reference"] > 0, floor  # Pillow's floor beside libvips'
    assert floor["extra"]["thumbor_cpu_ms"] == processing[1]["reference"]
    for row in (processing[0], processing[2], processing[3]):
        assert row["extra"]["engine"]["present"] is True, row
    assert processing[2]["reference"], processing[2]  # the plain GET of the same size
    documents = [row for row in rows if row["id"] == "12"]
    assert len(documents) == 2, documents  # the rate against pdftoppm, CPU per page
    assert all(row["reference"] > 0 for row in documents), documents
    video = [row for row in rows if row["id"] == "13"]
    # thumbnails against ffmpeg, H.264 and WebM times, then 2 nodes' p50 and p99
    assert len(video) == 5, video
    assert [row["scenario"].strip().endswith(("p50", "p99")) for row in video[3:]] == [True] * 2
    assert all(row["stowage"] > 0 and row["reference"] > 0 for row in video), video
    assert result["meta"]["quick"] is True
    assert "| 1 | GET 1 KiB by handle" in done.stdout  # the printed table
