"""Smoke test of the benchmark (scripts/bench --quick): it runs, starts its three servers
and produces a row for every scenario of issue 5. It does not assert speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = {"1", "2", "3", "4", "5", "6", "7", "8", "9", "1c", "2c", "10"}


def test_quick_benchmark_produces_every_scenario(tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--quick", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
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
    assert result["meta"]["quick"] is True
    assert "| 1 | GET 1 KiB by handle" in done.stdout  # the printed table
