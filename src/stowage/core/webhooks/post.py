"""One webhook attempt: POST the body to the URL behind the same address guard as url
fetches, and say how it went. Never raises for the receiver's problems."""

from __future__ import annotations

import time
from dataclasses import dataclass

import aiohttp

from stowage import errors
from stowage.core.fetch import guarded_session
from stowage.core.urlguard import check_url
from stowage.core.webhooks import payload


@dataclass(frozen=True)
class Outcome:
    ok: bool = False
    final: bool = False  # no point retrying (refused address, app gone)
    code: int | None = None
    error: str = ""


def refused(reason: str) -> Outcome:
    return Outcome(final=True, error=f"refused: {reason}")


class Poster:
    def __init__(self, *, allow_private: bool, timeout: float) -> None:
        self.allow_private = allow_private
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=self.timeout)
            self._session = guarded_session(self.allow_private, timeout)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def post(self, url: str, body: str, secret: str) -> Outcome:
        try:
            target = check_url(url, self.allow_private)
        except errors.StowageError as exc:
            return refused(exc.message)
        signed = payload.headers(secret, str(int(time.time())), body)
        try:
            async with self._client().post(
                target, data=body.encode(), headers=signed, allow_redirects=False
            ) as response:
                code = response.status
        except errors.StowageError as exc:
            return refused(exc.message)
        except TimeoutError:
            return Outcome(error=f"no answer within {self.timeout:g} s")
        except aiohttp.ClientConnectorError as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, errors.StowageError):
                return refused(cause.message)
            return Outcome(error=f"could not connect: {exc.strerror or type(exc).__name__}")
        except (aiohttp.ClientError, OSError) as exc:
            return Outcome(error=f"request failed: {type(exc).__name__}")
        if 200 <= code < 300:
            return Outcome(ok=True, code=code)
        return Outcome(code=code, error=f"the receiver answered {code}")
