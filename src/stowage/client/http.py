"""The client's requests: each streams, each turns an error body into ``ClientError``."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from stowage.client.profile import Profile

CHUNK = 256 * 1024
PART_SIZE = 8 * 1024 * 1024
STATE_DIR = Path("~/.cache/stowage/uploads")


class ClientError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code = status, code


class NoMultipart(Exception):
    """The server has no ``/multipart/start``."""


@dataclass
class UploadOptions:
    provider: str = "S3"
    path: str | None = None
    container: str | None = None
    multipart_threshold: int = 2 * PART_SIZE
    part_size: int = PART_SIZE
    state_dir: Path = field(default_factory=lambda: STATE_DIR.expanduser())


Advance = Callable[[int], None]


async def _check(resp: aiohttp.ClientResponse) -> None:
    if resp.status < 400:
        return
    text = await resp.text()
    try:
        error = json.loads(text)["error"]
        raise ClientError(resp.status, error["code"], error["message"])
    except (ValueError, KeyError, TypeError):
        raise ClientError(resp.status, "HTTP_ERROR", text[:200]) from None


async def file_chunks(
    path: Path, advance: Advance, start: int = 0, length: int = -1
) -> AsyncIterator[bytes]:
    """Reads a file (or ``length`` bytes from ``start``) a chunk at a time."""
    left = os.path.getsize(path) - start if length < 0 else length
    with path.open("rb") as f:
        f.seek(start)
        while left > 0:
            chunk = await asyncio.to_thread(f.read, min(CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            advance(len(chunk))
            yield chunk


class Client:
    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(sock_read=300))

    async def close(self) -> None:
        await self.session.close()

    @property
    def auth(self) -> aiohttp.BasicAuth | None:
        return aiohttp.BasicAuth("app", self.profile.secret) if self.profile.secret else None

    def url(self, path: str) -> str:
        return f"{self.profile.root}{path}"

    def query(self, **extra: Any) -> dict[str, str]:
        items = {"key": self.profile.key, **extra}
        return {k: str(v) for k, v in items.items() if v is not None}

    async def json(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        async with self.session.request(method, self.url(path), auth=self.auth, **kw) as resp:
            await _check(resp)
            body: dict[str, Any] = await resp.json()
            return body

    # -- operations ------------------------------------------------------------
    async def store(self, path: Path, opts: UploadOptions, advance: Advance) -> dict[str, Any]:
        params = self.query(filename=path.name, path=opts.path, container=opts.container)
        return await self.json(
            "POST",
            f"/api/store/{opts.provider}",
            params=params,
            data=file_chunks(path, advance),
            headers={"Content-Type": "application/octet-stream"},
        )

    async def overwrite(self, handle: str, path: Path, advance: Advance) -> dict[str, Any]:
        return await self.json(
            "POST",
            f"/api/file/{handle}",
            params=self.query(),
            data=file_chunks(path, advance),
            headers={"Content-Type": "application/octet-stream"},
        )

    async def metadata(self, handle: str, selectors: list[str]) -> dict[str, Any]:
        return await self.json(
            "GET",
            f"/api/file/{handle}/metadata",
            params=self.query(**dict.fromkeys(selectors, "true")),
        )

    async def remove(self, handle: str) -> dict[str, Any]:
        return await self.json("DELETE", f"/api/file/{handle}", params=self.query())

    async def list_page(self, after: str | None, limit: int) -> dict[str, Any]:
        return await self.json("GET", "/api/files", params=self.query(after=after, limit=limit))

    async def download(
        self, handle: str, out: Path | None, begin: Callable[[str, int], None], advance: Advance
    ) -> Path:
        """Streams to a temporary file beside the target, renamed into place when whole."""
        async with self.session.get(
            self.url(f"/api/file/{handle}"), params=self.query(dl="true"), auth=self.auth
        ) as resp:
            await _check(resp)
            target = (
                out
                or Path(
                    resp.content_disposition.filename
                    if resp.content_disposition and resp.content_disposition.filename
                    else handle
                ).name
            )
            target = Path(target)
            begin(target.name, resp.content_length or 0)
            tmp = target.with_name(f".{target.name}.stowage-part")
            try:
                with tmp.open("wb") as f:
                    async for chunk in resp.content.iter_chunked(CHUNK):
                        await asyncio.to_thread(f.write, chunk)
                        advance(len(chunk))
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
            return target

    # -- resumable upload (the Filestack multipart protocol) ---------------------
    async def upload(self, path: Path, opts: UploadOptions, advance: Advance) -> dict[str, Any]:
        size = path.stat().st_size
        if size < opts.multipart_threshold:
            return await self.store(path, opts, advance)
        try:
            return await Multipart(self, path, opts, advance).run()
        except NoMultipart:  # a server without the upload protocol: one streamed store
            return await self.store(path, opts, advance)


class Multipart:
    """Start (or resume) a session, send the missing parts, complete. Finished parts are
    written to a state file, so an interrupted upload resumes where it stopped."""

    def __init__(self, client: Client, path: Path, opts: UploadOptions, advance: Advance) -> None:
        self.client, self.path, self.opts, self.advance = client, path, opts, advance
        stat = path.stat()
        self.size = stat.st_size
        ident = json.dumps(
            [str(path.resolve()), stat.st_size, stat.st_mtime_ns, client.profile.root,
             client.profile.key, opts.provider, opts.path, opts.container]
        )  # fmt: skip
        self.state_file = opts.state_dir / (
            hashlib.sha256(ident.encode()).hexdigest()[:32] + ".json"
        )

    def _load(self) -> dict[str, Any]:
        try:
            state: dict[str, Any] = json.loads(self.state_file.read_text())
            return state
        except (OSError, ValueError):
            return {}

    def _save(self, state: dict[str, Any]) -> None:
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.state_file)

    def _fields(self, **extra: Any) -> dict[str, Any]:
        return {"apikey": self.client.profile.key, **extra}

    async def run(self) -> dict[str, Any]:
        state = self._load()
        if not state.get("upload_id"):
            state = {"upload_id": await self._start(), "parts": {}}
            self._save(state)
        try:
            return await self._send(state)
        except ClientError as exc:
            if exc.code != "UPLOAD_NOT_FOUND" or not state["parts"]:
                raise
            self.state_file.unlink(missing_ok=True)  # the session expired: start over
            state = {"upload_id": await self._start(), "parts": {}}
            self._save(state)
            return await self._send(state)

    async def _start(self) -> str:
        store = {
            "location": self.opts.provider,
            "path": self.opts.path,
            "container": self.opts.container,
        }
        body = self._fields(
            filename=self.path.name,
            size=self.size,
            store={k: v for k, v in store.items() if v is not None},
        )
        try:
            started = await self.client.json("POST", "/multipart/start", json=body)
        except ClientError as exc:
            if exc.code == "NOT_FOUND":
                raise NoMultipart() from exc
            raise
        return str(started["upload_id"])

    async def _send(self, state: dict[str, Any]) -> dict[str, Any]:
        count = max(1, -(-self.size // self.opts.part_size))
        for number in range(1, count + 1):
            start = (number - 1) * self.opts.part_size
            length = min(self.opts.part_size, self.size - start)
            if str(number) in state["parts"]:
                self.advance(length)
                continue
            state["parts"][str(number)] = await self._part(
                state["upload_id"], number, start, length
            )
            self._save(state)
        parts = [
            {"part_number": int(n), "etag": e}
            for n, e in sorted(state["parts"].items(), key=lambda i: int(i[0]))
        ]
        result = await self._complete(state["upload_id"], parts)
        self.state_file.unlink(missing_ok=True)
        return result

    async def _part(self, upload_id: str, number: int, start: int, length: int) -> str:
        digest = hashlib.md5(usedforsecurity=False)
        async for chunk in file_chunks(self.path, lambda n: None, start, length):
            digest.update(chunk)
        target = await self.client.json(
            "POST",
            "/multipart/upload",
            json=self._fields(
                upload_id=upload_id,
                part=number,
                size=length,
                md5=base64.b64encode(digest.digest()).decode(),
            ),
        )
        async with self.client.session.put(
            target["url"],
            data=file_chunks(self.path, self.advance, start, length),
            headers={**target.get("headers", {}), "Content-Length": str(length)},
        ) as resp:
            await _check(resp)
            return resp.headers.get("ETag", "").strip('"')

    async def _complete(self, upload_id: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
        body = self._fields(
            upload_id=upload_id, parts=parts, filename=self.path.name, size=self.size
        )
        while True:
            async with self.client.session.post(
                self.client.url("/multipart/complete"), json=body, auth=self.client.auth
            ) as resp:
                await _check(resp)
                if resp.status != 202:
                    result: dict[str, Any] = await resp.json()
                    return result
            await asyncio.sleep(1.0)
