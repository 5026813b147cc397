"""The reference cluster on one machine: ``scripts/cluster up|down|status``.

Runs what docs/deployment.md ("The reference cluster") describes for production, from the
files in deploy/ as they are: PostgreSQL, an S3 store (moto's server), two Stowage nodes
running ``deploy/cluster/node.toml``, Varnish running ``deploy/varnish/stowage.vcl`` and
nginx running ``deploy/cluster/nginx.conf`` with TLS from a local CA made here. Every
process runs detached; its output goes to ``<state>/<name>.log`` and its pid to
``<state>/pids.json``. The state folder is ``.cluster/`` in the checkout, or
``$STOWAGE_CLUSTER_DIR``. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import pwd
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "deploy" / "cluster"
STATE = Path(os.environ.get("STOWAGE_CLUSTER_DIR", ROOT / ".cluster")).resolve()
VENV_BIN = ROOT / ".venv" / "bin"
NAMES = ("api.stowage.test", "cdn.stowage.test")
TLS_PORT = 8443
PORTS = {
    "postgres": 15432,
    "s3": 19000,
    "node1": 8180,
    "node1-cdn": 8181,
    "node2": 8280,
    "node2-cdn": 8281,
    "varnish": 6081,
    "nginx-cdn": 8081,
    "nginx-tls": TLS_PORT,
}
# Started in this order, stopped in the reverse one.
ORDER = ("postgres", "s3", "node1", "node2", "varnish", "nginx")


class ClusterError(RuntimeError):
    pass


def log_of(name: str) -> Path:
    return STATE / f"{name}.log"


def tail(name: str, lines: int = 30) -> str:
    path = log_of(name)
    if not path.exists():
        return "(no output)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def run(cmd: list[str], name: str, **kwargs: object) -> None:
    """A set-up step; on failure its own output is the error."""
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise ClusterError(f"{name} failed ({done.returncode}): {done.stderr or done.stdout}")


def spawn(name: str, cmd: list[str], **kwargs: object) -> int:
    with log_of(name).open("ab") as out:
        proc = subprocess.Popen(  # type: ignore[call-overload]
            cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kwargs
        )
    pids = read_pids()
    pids[name] = proc.pid
    (STATE / "pids.json").write_text(json.dumps(pids))
    return int(proc.pid)


def read_pids() -> dict[str, int]:
    path = STATE / "pids.json"
    return json.loads(path.read_text()) if path.exists() else {}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_port(name: str, port: int, pid: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if listening(port):
            return
        if not alive(pid):
            raise ClusterError(f"{name} exited before listening on {port}:\n{tail(name)}")
        time.sleep(0.1)
    raise ClusterError(f"{name} is not listening on {port} after {seconds:.0f} s:\n{tail(name)}")


def make_tls() -> None:
    """A local CA and one certificate for both public names (kept between runs)."""
    tls = STATE / "tls"
    if (tls / "stowage.test.pem").exists():
        return
    tls.mkdir(parents=True, exist_ok=True)
    sans = ",".join(f"DNS:{name}" for name in (*NAMES, "*.stowage.test"))
    (tls / "ext.cnf").write_text(f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n")
    steps = {
        "openssl CA": "req -x509 -newkey rsa:2048 -nodes -days 825 -keyout ca.key -out ca.pem"
        " -subj /CN=Stowage-reference-cluster-CA -addext basicConstraints=critical,CA:TRUE"
        " -addext keyUsage=critical,keyCertSign,cRLSign",
        "openssl request": "req -newkey rsa:2048 -nodes -subj /CN=stowage.test"
        " -keyout stowage.test.key -out server.csr",
        "openssl sign": "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
        " -days 825 -extfile ext.cnf -out stowage.test.pem",
    }
    for name, args in steps.items():
        run(["openssl", *args.split()], name, cwd=tls)
    (tls / "stowage.test.key").chmod(0o600)


def pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise ClusterError(f"PostgreSQL's {name} is missing: run scripts/setup.d/80-postgres.sh")
    return found[-1]


def as_postgres() -> dict[str, object]:
    """PostgreSQL refuses to run as root: as root it runs as the postgres user."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam("postgres")
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def pg_folder(user: dict[str, object]) -> Path:
    """``<state>/pg``, or where the postgres user can reach when a parent of the state
    folder is closed to it (pytest's folders, a clone under /root): linked from there."""
    folder = STATE / "pg"
    if folder.is_symlink() or not user:
        return folder.resolve()
    probe = subprocess.run(["test", "-x", str(STATE)], check=False, **user)  # type: ignore[call-overload]
    if probe.returncode == 0:
        return folder
    digest = hashlib.sha256(str(STATE).encode()).hexdigest()[:12]
    outside = Path(f"/var/tmp/stowage-cluster-{digest}")
    outside.mkdir(mode=0o755, exist_ok=True)
    folder.symlink_to(outside)
    return outside


def start_postgres() -> None:
    user = as_postgres()
    folder = pg_folder(user)
    if not (folder / "data" / "PG_VERSION").exists():
        folder.mkdir(parents=True, exist_ok=True)
        if user:
            os.chown(folder, int(user["user"]), int(user["group"]))  # type: ignore[call-overload]
        cmd = [pg_bin("initdb"), "-D", str(folder / "data"), "-U", "stowage", "-A", "trust"]
        run([*cmd, "-E", "UTF8"], "initdb", **user)
    log_of("postgres").touch()
    if user:
        os.chown(log_of("postgres"), int(user["user"]), int(user["group"]))  # type: ignore[call-overload]
    cmd = [pg_bin("postgres"), "-D", str(folder / "data"), "-p", str(PORTS["postgres"])]
    cmd += ["-k", str(folder), "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200"]
    pid = spawn("postgres", cmd, **user)
    wait_port("postgres", PORTS["postgres"], pid)
    dsn = f"postgresql://stowage@127.0.0.1:{PORTS['postgres']}/postgres"
    for _ in range(100):  # listening comes a moment before accepting queries
        done = subprocess.run([pg_bin("pg_isready"), "-q", "-d", dsn], check=False)
        if done.returncode == 0:
            break
        time.sleep(0.1)
    exists = subprocess.run(
        [pg_bin("psql"), "-XAtq", dsn, "-c", "SELECT 1 FROM pg_database WHERE datname='stowage'"],
        capture_output=True,
        text=True,
        check=False,
    )
    if exists.stdout.strip() != "1":
        run([pg_bin("psql"), "-Xq", dsn, "-c", "CREATE DATABASE stowage"], "create database")


def start_s3() -> None:
    cmd = [str(VENV_BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(PORTS["s3"])]
    wait_port("s3", PORTS["s3"], spawn("s3", cmd))
    bucket = urllib.request.Request(f"http://127.0.0.1:{PORTS['s3']}/stowage", method="PUT")
    with urllib.request.urlopen(bucket, timeout=10) as answer:
        answer.read()


def stowage(*args: str) -> list[str]:
    return [str(VENV_BIN / "stowage"), "--config", str(HERE / "node.toml"), *args]


def start_nodes() -> None:
    run(stowage("db", "upgrade"), "stowage db upgrade")
    extra = {"node1": [], "node2": ["--port", "8280", "--cdn-port", "8281"]}
    for name, ports in extra.items():
        data = STATE / name
        data.mkdir(parents=True, exist_ok=True)
        cmd = [*stowage()[:3], "--data-dir", str(data), "serve", *ports]
        spawn(name, cmd)
    for name in extra:
        wait_port(name, PORTS[name], read_pids()[name])
        wait_port(name, PORTS[f"{name}-cdn"], read_pids()[name])


def varnish_parameters() -> list[str]:
    """The -p options of the production command, deploy/varnish/override.conf."""
    unit = (ROOT / "deploy/varnish/override.conf").read_text().splitlines()
    words = next(line for line in unit if line.startswith("ExecStart=/")).split()
    return [w for i, w in enumerate(words) if w == "-p" or (i and words[i - 1] == "-p")]


def start_varnish() -> None:
    cmd = ["/usr/sbin/varnishd", "-F", "-j", "none", "-T", "none", "-n", str(STATE / "varnish")]
    cmd += ["-a", f"127.0.0.1:{PORTS['varnish']}", "-f", str(ROOT / "deploy/varnish/stowage.vcl")]
    cmd += varnish_parameters()
    wait_port("varnish", PORTS["varnish"], spawn("varnish", [*cmd, "-s", "malloc,256m"]))


def start_nginx() -> None:
    folder = STATE / "nginx"
    (folder / "tmp").mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    (folder / "tmp").chmod(0o777)
    if not (folder / "tls").exists():
        (folder / "tls").symlink_to(STATE / "tls")
    (folder / "nginx.conf").write_text(
        f"daemon off;\nworker_processes 2;\npid {folder}/nginx.pid;\n"
        f"error_log {STATE}/nginx.log warn;\nevents {{ worker_connections 1024; }}\n"
        f"http {{\n  client_body_temp_path {folder}/tmp/body;\n"
        f"  proxy_temp_path {folder}/tmp/proxy;\n  fastcgi_temp_path {folder}/tmp/fastcgi;\n"
        f"  uwsgi_temp_path {folder}/tmp/uwsgi;\n  scgi_temp_path {folder}/tmp/scgi;\n"
        f"  include {HERE}/nginx.conf;\n}}\n"
    )
    pid = spawn("nginx", ["/usr/sbin/nginx", "-p", str(folder), "-c", str(folder / "nginx.conf")])
    wait_port("nginx", PORTS["nginx-tls"], pid)
    wait_port("nginx", PORTS["nginx-cdn"], pid)


def busy_ports() -> list[str]:
    return [f"{name} ({port})" for name, port in PORTS.items() if listening(port)]


def up() -> None:
    if any(alive(pid) for pid in read_pids().values()):
        raise ClusterError("the cluster is already running: `scripts/cluster status`")
    busy = busy_ports()
    if busy:
        raise ClusterError(f"these ports are taken by something else: {', '.join(busy)}")
    STATE.mkdir(parents=True, exist_ok=True)
    (STATE / "pids.json").unlink(missing_ok=True)
    steps = [
        ("tls", make_tls),
        ("postgres", start_postgres),
        ("s3", start_s3),
        ("nodes", start_nodes),
        ("varnish", start_varnish),
        ("nginx", start_nginx),
    ]
    for number, (name, step) in enumerate(steps, start=1):
        began = time.monotonic()
        print(f"[{number}/{len(steps)}] {name} ...", end=" ", flush=True)
        try:
            step()
        except BaseException:
            print("failed")
            down(quiet=True)
            raise
        print(f"ready in {time.monotonic() - began:.1f} s", flush=True)
    check_front()
    print(
        f"API  https://api.stowage.test:{TLS_PORT}/api   CDN  https://cdn.stowage.test:{TLS_PORT}"
    )
    print(f"CA   {STATE / 'tls' / 'ca.pem'}   (curl --cacert it, with")
    resolve = " ".join(f"--resolve {name}:{TLS_PORT}:127.0.0.1" for name in NAMES)
    print(f"     {resolve})")
    print(f"Apps: {' '.join(stowage('apps', 'create'))}")


def check_front() -> None:
    """Both nodes answer /readyz through the TLS front (one request lands on each)."""
    context = ssl.create_default_context(cafile=str(STATE / "tls" / "ca.pem"))
    for _ in range(2):
        sock = socket.create_connection(("127.0.0.1", TLS_PORT), timeout=10)
        with context.wrap_socket(sock, server_hostname=NAMES[0]) as tls:
            tls.sendall(
                b"GET /readyz HTTP/1.1\r\nHost: api.stowage.test\r\nConnection: close\r\n\r\n"
            )
            status = tls.recv(64).split(b"\r\n", 1)[0]
        if b" 200 " not in status:
            raise ClusterError(f"the API name answered {status!r} to /readyz")


def stop(name: str, pid: int) -> None:
    if not alive(pid):
        return
    os.killpg(pid, signal.SIGQUIT if name == "nginx" else signal.SIGTERM)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        os.killpg(pid, signal.SIGKILL)


def down(quiet: bool = False) -> None:
    pids = read_pids()
    for name in reversed(ORDER):
        if name in pids:
            stop(name, pids[name])
            if not quiet:
                print(f"stopped {name}")
    (STATE / "pids.json").unlink(missing_ok=True)


def status() -> int:
    pids, bad = read_pids(), 0
    for name in ORDER:
        pid = pids.get(name)
        state = "running" if pid and alive(pid) else "stopped"
        bad += state != "running"
        print(f"{name:9} {state:8} pid {pid or '-'}  log {log_of(name)}")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else ""
    try:
        if command == "up":
            up()
        elif command == "down":
            down()
        elif command == "status":
            return status()
        else:
            print("usage: scripts/cluster up|down|status", file=sys.stderr)
            return 2
    except ClusterError as exc:
        print(f"scripts/cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main(sys.argv))
