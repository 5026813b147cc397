"""One node against three behind nginx, on this machine: PostgreSQL registry and the same
stores for both, so the only difference is the number of nodes.

    scripts/bench --multinode [--seconds 10] [--connections 32]


Prints one row per scenario: requests per second through one node (direct) and through
nginx over three nodes (the very cluster tests/multinode starts, with
deploy/nginx/stowage.conf). Two stores behind the nodes: moto S3 (one Python process,
which bounds every S3 row whatever the number of nodes) and local disk in a folder all
three nodes share (the shared-filesystem deployment), where the nodes' own CPU is what
limits. On a 2-core machine three nodes compete with nginx, PostgreSQL and wrk for the
same cores, so expect little gain here.
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
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.multinode.cluster import Cluster, Nginx, nginx_folder, start_cluster  # noqa: E402
from tests.servers.fx_postgres import start_postgres, stop_postgres  # noqa: E402
from tests.servers.fx_s3 import S3Endpoint, make_bucket, start_moto, stop  # noqa: E402

WRK = "/usr/bin/wrk"
POST_LUA = 'wrk.method = "POST"\nwrk.body = string.rep("x", 1024)\n'


def cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)


def wrk(url: str, seconds: int, connections: int, script: Path | None = None) -> Rate:
    cmd = [WRK, "-t2", f"-c{connections}", f"-d{seconds}s", url]
    if script is not None:
        cmd[1:1] = ["-s", str(script)]
    idle0, total0 = cpu_times()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    idle1, total1 = cpu_times()
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"wrk saw {errors[1]} failed responses:\n{out}")
    found = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert found, out
    return Rate(float(found[1]), 100 * (idle1 - idle0) / max(1, total1 - total0))


@dataclass
class Rate:
    per_second: float
    idle_cpu: float  # percent of the machine's CPU left idle during the run

    def __str__(self) -> str:
        return f"{self.per_second:.0f} ({self.idle_cpu:.0f}% idle)"


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


def local_disk_app(cluster: Cluster) -> str:
    """An app whose files live on local disk in one folder that every node uses."""
    storage = {"S3": {"type": "local", "root": str(cluster.lb.folder / "shared-disk")}}
    created = json.loads(cluster.cli("apps", "create", "--json", "--storage", json.dumps(storage)))
    key: str = created["api_key"]
    return key


HEADER = (
    "| scenario (req/s, idle CPU) | 1 node direct | 1 node + nginx | 3 nodes + nginx "
    "| 3 vs 1 behind nginx | 3 + nginx vs 1 direct |\n|---|---|---|---|---|---|"
)


def one_node_balancer(cluster: Cluster) -> Nginx:
    """The same nginx config with every upstream entry pointing at node 1."""
    balancer = Nginx(nginx_folder(cluster.lb.folder / "one-node-nginx"))
    balancer.start([cluster.nodes[0]] * 3)
    return balancer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    postgres = start_postgres()
    moto, moto_port = start_moto(Path(tempfile.mkdtemp()) / "moto.log")
    cluster = one_lb = None
    try:
        endpoint = S3Endpoint(f"http://127.0.0.1:{moto_port}", "testing", "testing")
        make_bucket(endpoint)
        cluster = start_cluster(postgres, endpoint)
        one, lb = cluster.nodes[0].api, cluster.lb.api
        one_lb = one_node_balancer(cluster)
        handle = store_one(lb, cluster.key)
        disk_key = local_disk_app(cluster)
        disk_handle = store_one(lb, disk_key)
        script = Path(tempfile.mkdtemp()) / "post.lua"
        script.write_text(POST_LUA)
        rows = [
            ("readyz (one PostgreSQL query)", "/readyz", None),
            ("GET 1 KiB (S3 behind)", f"/api/file/{handle}", None),
            ("metadata", f"/api/file/{handle}/metadata", None),
            ("store 1 KiB", f"/api/store/S3?key={cluster.key}", script),
            ("GET 1 KiB (shared local disk)", f"/api/file/{disk_handle}", None),
            ("store 1 KiB (shared local disk)", f"/api/store/S3?key={disk_key}", script),
        ]
        print(f"load average at the start: {os.getloadavg()[0]:.2f}")
        print(HEADER)
        results: list[dict[str, object]] = []
        for name, path, lua in rows:
            single = wrk(one + path, args.seconds, args.connections, lua)
            behind = wrk(one_lb.api + path, args.seconds, args.connections, lua)
            three = wrk(lb + path, args.seconds, args.connections, lua)
            print(
                f"| {name} | {single} | {behind} | {three} "
                f"| {three.per_second / behind.per_second:.2f}x "
                f"| {three.per_second / single.per_second:.2f}x |"
            )
            runs = {"one_node": single, "one_node_nginx": behind, "three_nodes": three}
            results.append({"scenario": name, **{k: asdict(v) for k, v in runs.items()}})
        save(results)
    finally:
        if one_lb is not None:
            one_lb.stop()
        if cluster is not None:
            cluster.stop()
        stop(moto)
        stop_postgres(postgres)


if __name__ == "__main__":
    main()
