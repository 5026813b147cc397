"""Stowage serving one domain's Filestack hosts, as docs/deployment.md says: the node with
deploy/cname/stowage.toml (``cname = "stowage.test:<port>"``) behind nginx running
deploy/cname/nginx.conf, TLS from a CA made for the test. For tests/sdk/test_cname.py and
tests/browser/test_picker.py; the clients resolve *.stowage.test to 127.0.0.1 themselves.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.multinode.cluster import ROOT, Nginx, nginx_folder
from tests.servers.ports import free_port
from tests.servers.stowage_serve import StowageServe

CONF = ROOT / "deploy" / "cname" / "nginx.conf"
NODE = ROOT / "deploy" / "cname" / "stowage.toml"


@dataclass
class Front:
    server: StowageServe
    cname: str
    apikey: str
    ca: Path
    folder: Path


def _test_ca(folder: Path) -> None:
    """A CA, and a certificate it signs for *.stowage.test."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout",
            "ca.key", "-out", "ca.pem", "-subj", "/CN=Stowage test CA")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out",
            "server.csr", "-subj", "/CN=stowage.test")  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=DNS:*.stowage.test\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "1", "-out", "cert.pem", "-extfile", "san.ext")  # fmt: skip
    for name in ("cert.pem", "key.pem", "ca.pem"):
        (folder / name).chmod(0o644)


def _nginx_conf(folder: Path, node: int, https: int, http: int) -> str:
    text = CONF.read_text()
    replaced = [
        ("127.0.0.1:8080;", f"127.0.0.1:{node};"),
        ("listen 443 ssl http2;", f"listen 127.0.0.1:{https} ssl http2;"),
        ("listen 80;", f"listen 127.0.0.1:{http};"),
        ("/etc/letsencrypt/live/example.com/fullchain.pem", str(folder / "cert.pem")),
        ("/etc/letsencrypt/live/example.com/privkey.pem", str(folder / "key.pem")),
        ("example.com", "stowage.test"),
    ]
    for old, new in replaced:
        assert old in text, old
        text = text.replace(old, new)
    return text


def serving(folder: Path) -> Iterator[Front]:
    """The node and nginx, running until the generator is closed."""
    folder = nginx_folder(folder)
    _test_ca(folder)
    https, http = free_port(), free_port()
    cname = f"stowage.test:{https}"
    text = NODE.read_text()
    assert 'cname = "example.com"' in text
    (folder / "stowage.toml").write_text(text.replace('"example.com"', f'"{cname}"'))
    # data_dir and the ports: StowageServe's command line overrides the file's
    server = StowageServe(folder / "data", env={"STOWAGE_CONFIG": str(folder / "stowage.toml")})
    apikey = json.loads(server.cli("apps", "create", "--json"))["api_key"]
    server.start()
    lb = Nginx(folder, api_port=https, cdn_port=http)
    try:
        lb.run(_nginx_conf(folder, server.port, https, http))
        yield Front(server, cname, apikey, folder / "ca.pem", folder)
    finally:
        lb.stop()
        server.stop()
