"""Both official SDKs with only their ``cname`` set (issue 25), against Stowage serving the
domain's hosts as docs/deployment.md says (tests/sdk/cname_front.py: deploy/cname's node
and nginx files, TLS from a test CA), the names resolved to 127.0.0.1 inside the SDK's
process only (no /etc/hosts change).

The port in the cname is the test's: the SDKs keep whatever follows the hosts' first
label, so ``upload.stowage.test:<port>`` is what they call, as ``upload.example.com`` is
in a deployment on 443.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pyvips

from tests.multinode.cluster import ROOT
from tests.sdk.cname_front import Front, serving
from tests.sdk.stack import NODE_MODULES, MiB, make_file

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    yield from serving(tmp_path_factory.mktemp("cname"))


@pytest.fixture(scope="module")
def samples(front: Front) -> dict[str, Any]:
    big = make_file(front.folder / "big.bin", 11 * MiB + 777)  # three parts in either SDK
    png = front.folder / "picture.png"
    pyvips.Image.black(120, 80).draw_rect([200, 40, 10], 10, 10, 50, 30, fill=True).write_to_file(
        str(png)
    )
    return {"big": big, "png": png}


def _run(argv: list[str], env: dict[str, str]) -> Any:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, cwd=HERE)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(lines[-1])


def _width(body_b64: str) -> int:
    return int(pyvips.Image.new_from_buffer(base64.b64decode(body_b64), "").width)


def test_python_sdk_with_only_its_cname(front: Front, samples: dict[str, Any]) -> None:
    big = samples["big"]
    args = {"cname": front.cname, "apikey": front.apikey, "path": str(big.path)}
    args["png"] = str(samples["png"])
    env = {**os.environ, "REQUESTS_CA_BUNDLE": str(front.ca), "PYTHONPATH": str(ROOT)}
    out = _run([sys.executable, str(HERE / "cname_flow.py"), json.dumps(args)], env)
    assert out["url"] == f"https://cdn.{front.cname}/{out['handle']}"
    assert out["sha256"] == big.sha256
    assert out["metadata"] == {"size": big.size, "sha256": big.sha256}
    shown = out["transform"]
    assert shown["url"].startswith(f"https://cdn.{front.cname}/resize=width:40/")
    assert (shown["status"], shown["type"]) == (200, "image/png")
    assert _width(shown["body"]) == 40


def test_js_sdk_with_only_its_cname(front: Front, samples: dict[str, Any]) -> None:
    big = samples["big"]
    source = f"{front.server.cdn}/{_any_handle(front, samples)}"
    args = {"cname": front.cname, "apikey": front.apikey, "path": str(big.path)}
    args |= {"png": str(samples["png"]), "source": source}
    env = {**os.environ, "NODE_PATH": str(NODE_MODULES), "NODE_EXTRA_CA_CERTS": str(front.ca)}
    answer = _run(["node", str(HERE / "js" / "cname.js"), json.dumps(args)], env)
    assert answer["ok"], answer
    out = answer["result"]
    host = front.cname
    assert out["urls"] == {
        "processUrl": f"https://process.{host}",
        "fileApiUrl": f"https://www.{host}/api/file",
        "uploadApiUrl": f"https://upload.{host}",
        "cloudApiUrl": f"https://cloud.{host}",
        "cdnUrl": f"https://cdn.{host}",
        "pickerUrl": f"https://static.{host}/picker/4.5.2/picker.js",
    }
    handle = out["upload"]["handle"]
    assert out["upload"]["url"] == f"https://cdn.{host}/{handle}"
    assert out["metadata"] == {"sha256": big.sha256, "size": big.size, "handle": handle}
    assert out["download"] == {"status": 200, "sha256": big.sha256}
    shown = out["transform"]
    assert shown["url"].startswith(f"https://cdn.{host}/")
    assert (shown["status"], shown["type"]) == (200, "image/png")
    assert _width(shown["body"]) == 40
    assert out["storeURL"]["url"].startswith(f"https://cdn.{host}/")
    assert out["prefetch"]["blocked"] is False
    assert out["prefetch"]["pickerOptions"] == {"maxFiles": 2}  # the page's own options
    cloud = out["cloud"]
    assert cloud["status"] == 400
    assert cloud["data"]["error"]["code"] == "CLOUD_DRIVE_UNAVAILABLE"


def _any_handle(front: Front, samples: dict[str, Any]) -> str:
    """A file stored over the node's plain port, for storeURL to fetch (loopback)."""
    import requests

    with open(samples["png"], "rb") as body:
        answer = requests.post(
            f"{front.server.api}/api/store/S3", params={"key": front.apikey}, data=body, timeout=30
        )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["handle"])
