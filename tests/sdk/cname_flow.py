"""filestack-python with only ``config.CNAME`` set (and ``CFG.API_URL``, which it does not
derive from the cname), against Stowage behind TLS, for tests/sdk/test_cname.py.

Run as its own process (``python cname_flow.py '<json>'``): other SDK tests overwrite the
SDK's URL properties for their whole process. Nothing of the SDK is changed; *.stowage.test
resolves to 127.0.0.1 in this process only, and the test CA comes from REQUESTS_CA_BUNDLE.
Prints one JSON line with what each call answered.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import sys
from typing import Any

import filestack
import requests

_real_getaddrinfo = socket.getaddrinfo


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if isinstance(host, str) and host.endswith(".stowage.test"):
        host = "127.0.0.1"
    return _real_getaddrinfo(host, *args, **kwargs)


def main(args: dict[str, Any]) -> dict[str, Any]:
    socket.getaddrinfo = _getaddrinfo
    filestack.config.CNAME = args["cname"]
    filestack.CFG.API_URL = f"https://www.{args['cname']}/api"  # type: ignore[misc]
    client = filestack.Client(args["apikey"])
    link = client.upload(filepath=args["path"])
    out: dict[str, Any] = {"url": link.url, "handle": link.handle}
    out["sha256"] = hashlib.sha256(link.get_content()).hexdigest()
    out["metadata"] = link.metadata(attributes_list=["size", "sha256"])
    image = client.upload(filepath=args["png"])
    shown = image.resize(width=40)
    answer = requests.get(shown.url, timeout=60)
    out["transform"] = {
        "url": shown.url,
        "status": answer.status_code,
        "type": answer.headers.get("content-type"),
        "body": base64.b64encode(answer.content).decode(),
    }
    return out


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
