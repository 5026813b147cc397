"""A small local Rackspace identity endpoint (v2.0) in front of Swift's tempauth.

``POST /v2.0/tokens`` with ``{"auth": {"RAX-KSKEY:apiKeyCredentials": {"username",
"apiKey"}}}`` answers the way Rackspace does: ``access.token`` (id, expiry,
tenant), ``access.serviceCatalog`` with a ``cloudFiles`` entry whose endpoints
carry per-region ``publicURL`` / ``internalURL``, and ``access.user``. The token
is a real tempauth token for ``<account>:<username>``, fetched per login.

Regions: ``DFW`` (public and internal URL both reach the proxy) and ``HKG``
(only the internal URL answers; the public one is a closed port), so a test can
tell which one a client picked. ``token_ttl`` sets the expiry it announces, so a
test can make tokens "expire" early; ``logins`` counts successful logins.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.servers.ports import free_port
from tests.servers.swift_aio import SwiftAIO


class RackspaceIdentity:
    def __init__(self, swift: SwiftAIO, token_ttl: float = 86400.0) -> None:
        self.swift = swift
        self.token_ttl = token_ttl
        self.logins = 0
        self.dead_url = f"http://127.0.0.1:{free_port()}/v1/AUTH_{swift.account}"
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,), daemon=True)

    @property
    def url(self) -> str:
        """The identity base URL, what a client config calls ``identity_url``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v2.0"

    @property
    def username(self) -> str:
        return self.swift.user

    @property
    def api_key(self) -> str:
        return self.swift.key

    def start(self) -> RackspaceIdentity:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def login(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        creds = body.get("auth", {}).get("RAX-KSKEY:apiKeyCredentials")
        if not isinstance(creds, dict):
            return 400, {"badRequest": {"code": 400, "message": "Invalid json request body"}}
        token = self._tempauth_token(str(creds.get("username")), str(creds.get("apiKey")))
        if token is None:
            return 401, {
                "unauthorized": {"code": 401, "message": "Username or api key is invalid."}
            }
        self.logins += 1
        return 200, self._access(token)

    def _tempauth_token(self, username: str, api_key: str) -> str | None:
        request = urllib.request.Request(
            self.swift.auth_url,
            headers={"X-Auth-User": f"{self.swift.account}:{username}", "X-Auth-Key": api_key},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return str(response.headers["X-Auth-Token"])
        except urllib.error.HTTPError as exc:
            if exc.code == 401:
                return None
            raise

    def _access(self, token: str) -> dict[str, Any]:
        expires = datetime.now(UTC) + timedelta(seconds=self.token_ttl)
        tenant = f"MossoCloudFS_{self.swift.account}"
        live = self.swift.storage_url
        endpoints = [
            {"region": "DFW", "tenantId": tenant, "publicURL": live, "internalURL": live},
            {"region": "HKG", "tenantId": tenant, "publicURL": self.dead_url, "internalURL": live},
        ]
        return {
            "access": {
                "token": {
                    "id": token,
                    "expires": expires.strftime("%Y-%m-%dT%H:%M:%S.")
                    + f"{expires.microsecond // 1000:03d}Z",
                    "tenant": {"id": "123456", "name": "123456"},
                    "RAX-AUTH:authenticatedBy": ["APIKEY"],
                },
                "serviceCatalog": [
                    {"name": "cloudFilesCDN", "type": "rax:object-cdn", "endpoints": []},
                    {"name": "cloudFiles", "type": "object-store", "endpoints": endpoints},
                ],
                "user": {
                    "id": "172157",
                    "name": self.swift.user,
                    "RAX-AUTH:defaultRegion": "DFW",
                    "roles": [{"id": "3", "name": "identity:user-admin"}],
                },
            }
        }


def _handler_for(identity: RackspaceIdentity) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v2.0/tokens":
                self._reply(404, {"itemNotFound": {"code": 404, "message": "Resource not found"}})
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            self._reply(*identity.login(body if isinstance(body, dict) else {}))

        def _reply(self, status: int, doc: dict[str, Any]) -> None:
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler
