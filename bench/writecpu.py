"""Server CPU seconds per GiB of a durable 1 GiB store, raw and multipart, for one or more
source trees run side by side and alternately (the same machine state for each).

    .venv/bin/python bench/writecpu.py /work/main .   # before (main) and after (here)

Each tree's ``src`` is put on a one-worker server's PYTHONPATH; the body is a page-cached
file sent with ``curl -T``; CPU is ``utime+stime`` of the server from ``/proc``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.servers import Stowage, cpu_seconds

GiB = 1 << 30
BOUNDARY = "stowagebenchboundary7d1a"  # the one bench/scenarios.py uses for row 6


def make_bodies(root: Path, size: int) -> tuple[Path, Path]:
    raw, form = root / "raw", root / "form"
    block = os.urandom(1 << 20)
    with raw.open("wb") as out:
        for _ in range(size >> 20):
            out.write(block)
    with form.open("wb") as out, raw.open("rb") as src:
        out.write(
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="fileUpload"; '
            'filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode()
        )
        while block := src.read(1 << 20):
            out.write(block)
        out.write(f"\r\n--{BOUNDARY}--\r\n".encode())
    return raw, form


def store(server: Stowage, key: str, body: Path, ctype: str, size: int) -> float:
    before = cpu_seconds(server.pids())
    url = f"{server.url}/api/store/S3?key={key}&filename=big.bin"
    argv = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"]
    code = subprocess.run(
        [*argv, "-H", f"Content-Type: {ctype}", "-T", str(body), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    used = cpu_seconds(server.pids()) - before
    if code != "200":
        raise RuntimeError(f"store answered {code}")
    for stored in (server.data_dir / "objects").rglob("*"):
        if stored.is_file():
            stored.unlink()
    return used / (size / GiB)


def main(trees: list[str]) -> None:
    size = int(os.environ.get("SIZE_MIB", "1024")) << 20
    rounds = int(os.environ.get("ROUNDS", "3"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        raw, form = make_bodies(root, size)
        kinds = {
            "raw": (raw, "application/octet-stream"),
            "multipart": (form, f"multipart/form-data; boundary={BOUNDARY}"),
        }
        servers = []
        for i, tree in enumerate(trees):
            src = str(Path(tree).resolve() / "src")
            server = Stowage(root / f"s{i}", 1, extra_env={"PYTHONPATH": src})
            server.extra_env["STOWAGE_MAX_UPLOAD_BYTES"] = str(4 * size)
            server.root.mkdir()
            os.environ["PYTHONPATH"] = src
            key, _ = server.create_app()
            server.start()
            servers.append((tree, server, key))
        results: dict[tuple[str, str], list[float]] = {}
        try:
            for _ in range(rounds):
                for tree, server, key in servers:
                    for kind, (body, ctype) in kinds.items():
                        cpu = store(server, key, body, ctype, size)
                        results.setdefault((tree, kind), []).append(cpu)
                        print(f"{tree} {kind}: {cpu:.2f} s/GiB", flush=True)
        finally:
            for _, server, _ in servers:
                assert server.proc is not None
                server.proc.terminate()
                server.proc.wait()
        for (tree, kind), runs in results.items():
            shown = ", ".join(f"{r:.2f}" for r in runs)
            print(f"{tree} {kind}: median {statistics.median(runs):.2f} s/GiB ({shown})")


if __name__ == "__main__":
    main(sys.argv[1:] or ["."])
