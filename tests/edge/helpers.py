"""Small HTTP steps the edge tests repeat."""

from __future__ import annotations

import contextlib
import http.client
import socket
import time

import aiohttp
import yarl
from multidict import CIMultiDict

from stowage.core.security import encode_policy, sign


def policy_query(secret: str, *calls: str) -> dict[str, str]:
    policy = encode_policy({"expiry": int(time.time()) + 3600, "call": list(calls)})
    return {"policy": policy, "signature": sign(secret, policy)}


async def store(
    http: aiohttp.ClientSession, api: str, key: str, body: bytes, secret: str = ""
) -> str:
    params = {"key": key, "filename": "f.txt"}
    if secret:
        params.update(policy_query(secret, "store"))
    async with http.post(f"{api}/store/S3", params=params, data=body) as resp:
        assert resp.status == 200, await resp.text()
        handle: str = (await resp.json())["handle"]
        return handle


async def overwrite(
    http: aiohttp.ClientSession, api: str, handle: str, secret: str, body: bytes
) -> None:
    auth = {"Authorization": aiohttp.encode_basic_auth("app", secret)}
    async with http.post(f"{api}/file/{handle}", data=body, headers=auth) as resp:
        assert resp.status == 200, await resp.text()


async def remove(http: aiohttp.ClientSession, api: str, handle: str, secret: str, how: str) -> None:
    auth = {"Authorization": aiohttp.encode_basic_auth("app", secret)}
    if how == "delete":
        request = http.delete(f"{api}/file/{handle}", headers=auth)
    else:
        skip = {"skip_storage": "true"} if how == "skip_storage" else {}
        request = http.post(f"{api}/file/{handle}/remove", params=skip, headers=auth)
    async with request as resp:
        assert resp.status == 200, await resp.text()


async def get(
    http: aiohttp.ClientSession, url: str | yarl.URL, **kwargs: object
) -> tuple[int, bytes, CIMultiDict[str]]:
    async with http.get(url, **kwargs) as resp:  # type: ignore[arg-type]
        return resp.status, await resp.read(), CIMultiDict(resp.headers)


def raw_get(port: int, head: bytes) -> tuple[int, dict[str, str], bytes] | None:
    """Sends a request head as given (no client library limits it) and reads the answer:
    status, headers (lower-case names) and body; None when the server closed without one."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        with contextlib.suppress(OSError):  # refused early: the answer may still be there
            sock.sendall(head)
        response = http.client.HTTPResponse(sock)
        try:
            response.begin()
            body = response.read()
        except (OSError, http.client.HTTPException):
            return None
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def gradient_png(width: int, height: int, blue: int) -> bytes:
    """A PNG of gradients in red and green over ``blue``: each size and blue its bytes."""
    import pyvips

    xy = pyvips.Image.xyz(width, height)
    image = (xy[0] % 256).bandjoin([xy[1] % 256, blue]).cast("uchar")
    data: bytes = image.write_to_buffer(".png")
    return data
