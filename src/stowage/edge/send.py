"""One purge request to one cache: ``PURGE /`` with the tags in ``xkey-purge``, as the
shipped VCL expects. Never raises: returns why it failed, or None."""

from __future__ import annotations

from collections.abc import Sequence

import aiohttp

TAG_REQUEST_HEADER = "xkey-purge"


async def purge(
    session: aiohttp.ClientSession, cache: str, tags: Sequence[str], timeout: float
) -> str | None:
    try:
        async with session.request(
            "PURGE",
            cache.rstrip("/") + "/",
            headers={TAG_REQUEST_HEADER: " ".join(tags)},
            timeout=aiohttp.ClientTimeout(total=timeout),
            allow_redirects=False,
        ) as response:
            await response.read()
            if response.status == 200:
                return None
            return f"the cache answered {response.status}"
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except (aiohttp.ClientError, OSError) as exc:
        return f"could not reach the cache: {type(exc).__name__}"
