"""Point the official filestack-python SDK at a Stowage server (no SDK code changed).

filestack-python has no address setting: its hosts are attributes of ``filestack.CFG``,
and it puts ``https://`` before the ``location_url`` that ``/multipart/start`` answers.
Behind TLS Stowage answers a bare host and that is all it takes; on plain http (as in
these tests) it answers ``http://host:port``, so the requests the SDK sends through
``filestack.utils`` get the doubled scheme taken off again.
"""

from __future__ import annotations

from typing import Any

import filestack
import filestack.utils
import requests


def _plain(url: str) -> str:
    return url.replace("https://http://", "http://", 1)


class _Session(requests.Session):
    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:
        return super().request(method, _plain(str(url)), *args, **kwargs)


class _Requests:
    """What filestack.utils uses of the requests module, with the scheme fixed."""

    Session = _Session
    adapters = requests.adapters
    exceptions = requests.exceptions

    @staticmethod
    def _call(method: str, url: str, **kwargs: Any) -> requests.Response:
        with _Session() as session:
            return session.request(method, url, **kwargs)

    def get(self, url: str, **kwargs: Any) -> requests.Response:
        return self._call("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> requests.Response:
        return self._call("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> requests.Response:
        return self._call("PUT", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> requests.Response:
        return self._call("DELETE", url, **kwargs)


def point_filestack_at(api_root: str, cdn_root: str) -> None:
    """``api_root``: Stowage's API origin (``http://host:8080``); ``cdn_root``: its CDN."""
    filestack.CFG.API_URL = f"{api_root}/api"  # type: ignore[misc]
    filestack.CFG.CDN_URL = cdn_root  # type: ignore[assignment,misc]
    filestack.CFG.MULTIPART_START_URL = f"{api_root}/multipart/start"  # type: ignore[assignment,misc]
    filestack.utils.original_requests = _Requests()  # type: ignore[assignment]
