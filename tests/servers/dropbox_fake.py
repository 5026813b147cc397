"""A small HTTPS fake of the Dropbox API v2, for the Dropbox provider's tests.

No Dropbox emulator exists, so this speaks the real wire protocol (routes,
``Dropbox-API-Arg``/``Dropbox-API-Result`` headers, JSON bodies, status codes
and error shapes such as ``409 {"error_summary": "path/not_found/..",
"error": {".tag": "path", "path": {".tag": "not_found"}}}``) to the official
``dropbox`` SDK. It serves the API and content hosts on one port, over TLS
with a self-signed certificate it writes to ``<dir>/cert.pem`` at start.

Covered:
- ``files/upload`` (modes add/overwrite/update), the 150 MiB per-request cap
  (``payload_too_large``), ``content_hash`` checks (``content_hash_mismatch``);
- ``files/upload_session/start``, ``append_v2`` and ``finish`` with cursor
  offset checks (``incorrect_offset`` with ``correct_offset``), ``closed`` and
  ``not_found`` sessions; a session commits atomically at ``finish``;
- ``files/download`` with ``Range`` (206/416), ``files/get_metadata``,
  ``files/delete_v2`` (files and folders), case-insensitive paths, implicit
  folders, ``conflict/folder`` and ``conflict/file_ancestor`` on writes, an
  optional quota (``insufficient_space``);
- bearer tokens, ``expired_access_token``/``invalid_access_token`` (401) and
  the refresh grant at ``/oauth2/token``.

File bodies live on disk under ``<dir>/blobs``; metadata lives in memory.

Test hooks under ``/__fake__/``: ``log`` (GET, the request log), ``expire``
(every token minted by a refresh so far expires), ``fault`` (make the next calls of a route
fail: ``after_commit_500``, ``skew_offset``, ``status``), ``quota``.

NOT covered: every other route (list_folder, copy, move, sharing, search,
batch and concurrent upload sessions, ``parent_rev`` on delete, property
groups, ``autorename``), folder entries created explicitly (folders exist only
as parents of files), the real name restrictions (``disallowed_name``,
``malformed_path`` beyond a leading ``/``), path roots/namespaces, app auth
and team auth, the real rate limiter, session expiry, separate hosts for API
and content routes, and Dropbox's Unicode case folding (``str.lower`` here).

Run: ``python -m tests.servers.dropbox_fake --fd FD --dir DIR --token T
--app-key K --app-secret S --refresh-token R`` where FD is a bound socket
inherited from the parent; prints ``READY`` once serving.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import ipaddress
import json
import os
import secrets
import socket
import ssl
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

UPLOAD_LIMIT = 150 * 1024 * 1024
HASH_BLOCK = 4 * 1024 * 1024
READ_CHUNK = 256 * 1024


class ContentHasher:
    """Dropbox's content_hash: SHA-256 over the SHA-256 of each 4 MiB block."""

    def __init__(self) -> None:
        self.outer = hashlib.sha256()
        self.block = hashlib.sha256()
        self.in_block = 0

    def update(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            take = min(HASH_BLOCK - self.in_block, len(view))
            self.block.update(view[:take])
            self.in_block += take
            view = view[take:]
            if self.in_block == HASH_BLOCK:
                self.outer.update(self.block.digest())
                self.block, self.in_block = hashlib.sha256(), 0

    def hexdigest(self) -> str:
        outer = self.outer.copy()
        if self.in_block:
            outer.update(self.block.digest())
        return outer.hexdigest()


@dataclass
class Entry:
    display: str
    size: int
    rev: str
    content_hash: str
    modified: dt.datetime
    blob: Path
    id: str = field(default_factory=lambda: "id:" + secrets.token_urlsafe(12))


@dataclass
class Session:
    blob: Path
    offset: int = 0
    closed: bool = False
    hasher: ContentHasher = field(default_factory=ContentHasher)


class ApiFailure(Exception):
    """An error reply in Dropbox's shape."""

    def __init__(self, error: dict[str, Any], status: int = 409) -> None:
        super().__init__(error)
        self.error, self.status = error, status


def _summary(error: Any) -> str:
    tags: list[str] = []
    while isinstance(error, dict) and ".tag" in error:
        tag = error[".tag"]
        tags.append(tag)
        error = error.get(tag, error.get("reason"))
    return "/".join([*tags, ".."])


def _json(data: Any, status: int = 200) -> web.Response:
    # The SDK insists on exactly "application/json" (no charset).
    return web.Response(
        body=json.dumps(data).encode(), status=status, content_type="application/json"
    )


def _stamp(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _lookup_error(tag: str) -> dict[str, Any]:
    return {".tag": tag}


class Fake:
    def __init__(self, root: Path, token: str, app_key: str, app_secret: str, refresh: str) -> None:
        self.blobs = root / "blobs"
        self.blobs.mkdir(parents=True, exist_ok=True)
        self.files: dict[str, Entry] = {}
        self.sessions: dict[str, Session] = {}
        self.static_token = token
        self.tokens: dict[str, bool] = {token: True}  # token -> still valid
        self.app_key, self.app_secret, self.refresh = app_key, app_secret, refresh
        self.log: list[dict[str, Any]] = []
        self.faults: dict[str, list[dict[str, Any]]] = {}
        self.quota: int | None = None

    # --- paths and metadata -------------------------------------------------

    def _path(self, arg: dict[str, Any], name: str = "path") -> str:
        path = str(arg.get(name, ""))
        if not path.startswith("/") or path.endswith("/") or "//" in path:
            raise ApiFailure(_lookup_error("malformed_path"))
        return path

    def _is_folder(self, lower: str) -> bool:
        prefix = lower + "/"
        return any(k.startswith(prefix) for k in self.files)

    def _file_md(self, key: str, e: Entry) -> dict[str, Any]:
        return {
            ".tag": "file",
            "name": e.display.rsplit("/", 1)[-1],
            "id": e.id,
            "client_modified": _stamp(e.modified),
            "server_modified": _stamp(e.modified),
            "rev": e.rev,
            "size": e.size,
            "path_lower": key,
            "path_display": e.display,
            "is_downloadable": True,
            "content_hash": e.content_hash,
        }

    def _folder_md(self, path: str) -> dict[str, Any]:
        return {
            ".tag": "folder",
            "name": path.rsplit("/", 1)[-1],
            "id": "id:folder-" + hashlib.sha1(path.lower().encode()).hexdigest()[:12],
            "path_lower": path.lower(),
            "path_display": path,
        }

    def _write_check(self, path: str, size: int, mode: Any) -> None:
        lower = path.lower()
        if self._is_folder(lower):
            raise ApiFailure({".tag": "conflict", "conflict": {".tag": "folder"}})
        parts = lower.split("/")
        for i in range(2, len(parts)):
            if "/".join(parts[:i]) in self.files:
                raise ApiFailure({".tag": "conflict", "conflict": {".tag": "file_ancestor"}})
        tag = mode.get(".tag") if isinstance(mode, dict) else (mode or "add")
        existing = self.files.get(lower)
        if existing and (tag == "add" or (tag == "update" and mode.get("update") != existing.rev)):
            raise ApiFailure({".tag": "conflict", "conflict": {".tag": "file"}})
        if self.quota is not None:
            used = sum(e.size for k, e in self.files.items() if k != lower)
            if used + size > self.quota:
                raise ApiFailure({".tag": "insufficient_space"})

    def _commit(self, path: str, blob: Path, size: int, digest: str) -> dict[str, Any]:
        lower = path.lower()
        rev = secrets.token_hex(8)
        final = self.blobs / f"{rev}.blob"
        os.replace(blob, final)
        old = self.files.get(lower)
        self.files[lower] = Entry(path, size, rev, digest, dt.datetime.now(dt.UTC), final)
        if old is not None:
            self.files[lower].id = old.id
            old.blob.unlink(missing_ok=True)  # an open reader keeps its handle
        return self._file_md(lower, self.files[lower])

    # --- request plumbing -----------------------------------------------------

    def _check_auth(self, request: web.Request) -> None:
        header = request.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ").strip()
        if token not in self.tokens:
            raise ApiFailure({".tag": "invalid_access_token"}, 401)
        if not self.tokens[token]:
            raise ApiFailure({".tag": "expired_access_token"}, 401)

    def _take_fault(self, route: str) -> dict[str, Any] | None:
        queue = self.faults.get(route)
        return queue.pop(0) if queue else None

    async def _receive(self, request: web.Request, dest: Path | None) -> tuple[int, str, bool]:
        """Drain the body (to ``dest`` if given); returns size, its content hash, too-large flag."""
        hasher, size = ContentHasher(), 0
        out = dest.open("ab") if dest is not None else None
        try:
            async for data in request.content.iter_chunked(1024 * 1024):
                size += len(data)
                if size > UPLOAD_LIMIT:
                    continue
                hasher.update(data)
                if out is not None:
                    out.write(data)
        finally:
            if out is not None:
                out.close()
        return size, hasher.hexdigest(), size > UPLOAD_LIMIT

    # --- routes ---------------------------------------------------------------

    async def route(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["route"]
        entry: dict[str, Any] = {"route": name, "range": request.headers.get("Range")}
        self.log.append(entry)
        handler = ROUTES.get(name)
        try:
            if handler is None:
                return web.Response(status=404, text=f"Unknown API function: {name!r}")
            self._check_auth(request)
            raw = request.headers.get("Dropbox-API-Arg")
            arg = json.loads(raw) if raw is not None else await request.json()
            entry["offset"] = arg.get("cursor", {}).get("offset")
            entry["path"] = arg.get("path") or arg.get("commit", {}).get("path")
            fault = self._take_fault(name)
            if fault and fault["kind"] == "status":
                await self._receive(request, None)
                response: web.StreamResponse = web.Response(status=fault["status"], text="fault")
            else:
                response = await handler(self, request, arg, fault)
        except ApiFailure as failure:
            if request.can_read_body:
                await self._receive(request, None)
            body = {"error_summary": _summary(failure.error), "error": failure.error}
            entry["error_summary"] = body["error_summary"]
            response = _json(body, failure.status)
        except (ValueError, KeyError) as exc:
            response = web.Response(
                status=400, text=f"Error in call to API function {name!r}: {exc}"
            )
        entry["status"] = response.status
        return response

    async def upload(self, request: web.Request, arg: dict[str, Any], _f: Any) -> web.Response:
        temp = self.blobs / f"up-{secrets.token_hex(8)}.part"
        try:
            size, digest, too_large = await self._receive(request, temp)
            if too_large:
                raise ApiFailure({".tag": "payload_too_large"})
            if arg.get("content_hash") not in (None, digest):
                raise ApiFailure({".tag": "content_hash_mismatch"})
            try:
                path = self._path(arg)
                self._write_check(path, size, arg.get("mode"))
            except ApiFailure as failure:
                error = {".tag": "path", "reason": failure.error, "upload_session_id": ""}
                raise ApiFailure(error) from None
            return _json(self._commit(path, temp, size, digest))
        finally:
            temp.unlink(missing_ok=True)

    async def _append(self, request: web.Request, arg: dict[str, Any], fault: Any) -> Session:
        cursor = arg["cursor"]
        session = self.sessions.get(cursor["session_id"])
        if session is None:
            raise ApiFailure({".tag": "not_found"})
        if fault and fault["kind"] == "skew_offset":
            session.offset += 1
        if session.closed:
            raise ApiFailure({".tag": "closed"})
        if cursor["offset"] != session.offset:
            raise ApiFailure({".tag": "incorrect_offset", "correct_offset": session.offset})
        await self._append_body(request, arg, session)
        return session

    async def _append_body(self, request: web.Request, arg: dict[str, Any], s: Session) -> None:
        staged = s.blob.with_suffix(".staged")
        try:
            size, digest, too_large = await self._receive(request, staged)
            if too_large:
                raise ApiFailure({".tag": "payload_too_large"})
            if arg.get("content_hash") not in (None, digest):
                raise ApiFailure({".tag": "content_hash_mismatch"})
            with staged.open("rb") as src, s.blob.open("ab") as dst:
                while data := src.read(READ_CHUNK):
                    s.hasher.update(data)
                    dst.write(data)
            s.offset += size
            s.closed = s.closed or bool(arg.get("close"))
        finally:
            staged.unlink(missing_ok=True)

    async def start(self, request: web.Request, arg: dict[str, Any], _f: Any) -> web.Response:
        session_id = secrets.token_urlsafe(16)
        session = Session(self.blobs / f"session-{secrets.token_hex(8)}.part")
        session.blob.touch()
        await self._append_body(request, arg, session)
        self.sessions[session_id] = session
        return _json({"session_id": session_id})

    async def append(self, request: web.Request, arg: dict[str, Any], fault: Any) -> web.Response:
        await self._append(request, arg, fault)
        if fault and fault["kind"] == "after_commit_500":
            return web.Response(status=500, text="fault after commit")
        return _json(None)

    async def finish(self, request: web.Request, arg: dict[str, Any], fault: Any) -> web.Response:
        try:
            session = await self._append(request, arg, fault)
        except ApiFailure as failure:
            if failure.error[".tag"] in ("payload_too_large", "content_hash_mismatch"):
                raise
            raise ApiFailure({".tag": "lookup_failed", "lookup_failed": failure.error}) from None
        commit = arg["commit"]
        try:
            path = self._path(commit)
            self._write_check(path, session.offset, commit.get("mode"))
        except ApiFailure as failure:
            raise ApiFailure({".tag": "path", "path": failure.error}) from None
        del self.sessions[arg["cursor"]["session_id"]]
        return _json(self._commit(path, session.blob, session.offset, session.hasher.hexdigest()))

    def _find(self, arg: dict[str, Any], tag: str) -> tuple[str, Entry | None]:
        try:
            path = self._path(arg)
        except ApiFailure as failure:
            raise ApiFailure({".tag": tag, tag: failure.error}) from None
        lower = path.lower()
        entry = self.files.get(lower)
        if entry is None and not self._is_folder(lower):
            raise ApiFailure({".tag": tag, tag: _lookup_error("not_found")})
        return path, entry

    async def download(
        self, request: web.Request, arg: dict[str, Any], _f: Any
    ) -> web.StreamResponse:
        _, entry = self._find(arg, "path")
        if entry is None:
            raise ApiFailure({".tag": "path", "path": _lookup_error("not_file")})
        handle = entry.blob.open("rb")
        try:
            start, end = _parse_range(request.headers.get("Range"), entry.size)
            if start > end and entry.size:
                return web.Response(status=416, text="invalid range")
            response = web.StreamResponse(status=206 if request.headers.get("Range") else 200)
            response.headers["Dropbox-API-Result"] = json.dumps(
                self._file_md(entry.display.lower(), entry)
            )
            response.headers["Content-Type"] = "application/octet-stream"
            response.content_length = max(end - start + 1, 0)
            if request.headers.get("Range"):
                response.headers["Content-Range"] = f"bytes {start}-{end}/{entry.size}"
            await response.prepare(request)
            handle.seek(start)
            remaining = end - start + 1
            while remaining > 0 and (data := handle.read(min(READ_CHUNK, remaining))):
                remaining -= len(data)
                await response.write(data)
            await response.write_eof()
            return response
        finally:
            handle.close()

    async def get_metadata(self, _r: web.Request, arg: dict[str, Any], _f: Any) -> web.Response:
        path, entry = self._find(arg, "path")
        if entry is None:
            return _json(self._folder_md(path))
        return _json(self._file_md(path.lower(), entry))

    async def delete(self, _r: web.Request, arg: dict[str, Any], _f: Any) -> web.Response:
        if arg.get("parent_rev") is not None:
            raise ValueError("parent_rev is not supported by this fake")
        path, entry = self._find(arg, "path_lookup")
        lower = path.lower()
        doomed = [lower] if entry else [k for k in self.files if k.startswith(lower + "/")]
        metadata = self._file_md(lower, entry) if entry else self._folder_md(path)
        for key in doomed:
            self.files.pop(key).blob.unlink(missing_ok=True)
        return _json({"metadata": metadata})

    async def token(self, request: web.Request) -> web.Response:
        form = await request.post()
        self.log.append({"route": "oauth2/token", "grant_type": form.get("grant_type")})
        if form.get("client_id") != self.app_key or form.get("client_secret") not in (
            None,
            self.app_secret,
        ):
            return _json({"error": "invalid_client", "error_description": "bad client"}, 400)
        if form.get("grant_type") != "refresh_token" or form.get("refresh_token") != self.refresh:
            return _json(
                {"error": "invalid_grant", "error_description": "refresh token is invalid"}, 400
            )
        token = "sl." + secrets.token_urlsafe(24)
        self.tokens[token] = True
        return _json({"access_token": token, "token_type": "bearer", "expires_in": 14400})

    async def hook(self, request: web.Request) -> web.Response:
        name = request.match_info["hook"]
        if name == "log":
            return _json(self.log)
        body = await request.json() if request.can_read_body else {}
        if name == "expire":  # every token minted by a refresh; the fixed token stays valid
            self.tokens = {t: t == self.static_token for t in self.tokens}
        elif name == "fault":
            for _ in range(int(body.get("times", 1))):
                self.faults.setdefault(body["route"], []).append(body)
        elif name == "quota":
            self.quota = body.get("bytes")
        else:
            return web.Response(status=404)
        return _json({})


ROUTES = {
    "files/upload": Fake.upload,
    "files/upload_session/start": Fake.start,
    "files/upload_session/append_v2": Fake.append,
    "files/upload_session/finish": Fake.finish,
    "files/download": Fake.download,
    "files/get_metadata": Fake.get_metadata,
    "files/delete_v2": Fake.delete,
}


def _parse_range(header: str | None, size: int) -> tuple[int, int]:
    if not header:
        return 0, size - 1
    first, _, last = header.removeprefix("bytes=").partition("-")
    if not first:
        return max(size - int(last), 0), size - 1
    return int(first), min(int(last), size - 1) if last else size - 1


def make_certificate(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dropbox-fake")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def serve(args: argparse.Namespace) -> None:
    root = Path(args.dir)
    cert, key = make_certificate(root)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    fake = Fake(root, args.token, args.app_key, args.app_secret, args.refresh_token)
    app = web.Application(client_max_size=UPLOAD_LIMIT * 2)
    app.router.add_post("/2/{route:.+}", fake.route)
    app.router.add_post("/oauth2/token", fake.token)
    app.router.add_route("*", "/__fake__/{hook}", fake.hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = socket.socket(fileno=args.fd)
    await web.SockSite(runner, sock, ssl_context=tls).start()
    print("READY", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for option in ("--dir", "--token", "--app-key", "--app-secret", "--refresh-token"):
        parser.add_argument(option, required=True)
    parser.add_argument("--fd", type=int, required=True)
    try:
        asyncio.run(serve(parser.parse_args()))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
