"""One node against three behind nginx, on this machine: PostgreSQL registry and moto S3
for both, so the only difference is the number of nodes.

    scripts/bench --multinode [--seconds 10] [--connections 32]


Prints one row per scenario: requests per second through one node (direct) and through
nginx over three nodes (the very cluster tests/multinode starts, with
deploy/nginx/stowage.conf). On a 2-core machine three nodes compete with nginx,
PostgreSQL and moto for the same cores, so expect little gain here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.multinode.conftest import start_cluster  # noqa: E402
from tests.servers.fx_postgres import start_postgres, stop_postgres  # noqa: E402
from tests.servers.fx_s3 import S3Endpoint, make_bucket, start_moto, stop  # noqa: E402

WRK = "/usr/bin/wrk"
POST_LUA = 'wrk.method = "POST"\nwrk.body = string.rep("x", 1024)\n'


def wrk(url: str, seconds: int, connections: int, script: Path | None = None) -> float:
    cmd = [WRK, "-t2", f"-c{connections}", f"-d{seconds}s", url]
    if script is not None:
        cmd[1:1] = ["-s", str(script)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"wrk saw {errors[1]} failed responses:\n{out}")
    found = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert found, out
    return float(found[1])


def store_one(base: str, key: str) -> str:
    request = urllib.request.Request(
        f"{base}/api/store/S3?key={key}", data=b"y" * 1024, method="POST"
    )
    with urllib.request.urlopen(request) as resp:
        handle: str = json.load(resp)["handle"]
        return handle


def save(results: list[dict[str, object]]) -> None:
    folder = REPO / "bench" / "results"
    folder.mkdir(exist_ok=True)
    path = folder / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-multinode.json"
    path.write_text(json.dumps({"load": os.getloadavg(), "rows": results}, indent=1))
    print(f"written to {path.relative_to(REPO)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    postgres = start_postgres()
    moto, moto_port = start_moto(Path(tempfile.mkdtemp()) / "moto.log")
    cluster = None
    try:
        endpoint = S3Endpoint(f"http://127.0.0.1:{moto_port}", "testing", "testing")
        make_bucket(endpoint)
        cluster = start_cluster(postgres, endpoint)
        one, lb = cluster.nodes[0].api, cluster.lb.api
        handle = store_one(lb, cluster.key)
        script = Path(tempfile.mkdtemp()) / "post.lua"
        script.write_text(POST_LUA)
        rows = [
            ("readyz (one PostgreSQL query)", "/readyz", None),
            ("GET 1 KiB (S3 behind)", f"/api/file/{handle}", None),
            ("metadata", f"/api/file/{handle}/metadata", None),
            ("store 1 KiB", f"/api/store/S3?key={cluster.key}", script),
        ]
        print(f"load average at the start: {os.getloadavg()[0]:.2f}")
        print("| scenario | 1 node (req/s) | 3 nodes + nginx (req/s) | ratio |")
        print("|---|---|---|---|")
        results = []
        for name, path, lua in rows:
            single = wrk(one + path, args.seconds, args.connections, lua)
            three = wrk(lb + path, args.seconds, args.connections, lua)
            print(f"| {name} | {single:.0f} | {three:.0f} | {three / single:.2f}x |")
            results.append({"scenario": name, "one_node": single, "three_nodes": three})
        save(results)
    finally:
        if cluster is not None:
            cluster.stop()
        stop(moto)
        stop_postgres(postgres)


if __name__ == "__main__":
    main()
