"""What the SDK's picker asks before it opens: ``/prefetch`` (the app's picker settings)
and the cloud API of third-party drives, which Stowage does not connect to.

filestack-js's ``client.picker()`` posts ``{apikey, settings, permissions, picker_config}``
to ``<upload host>/prefetch`` and opens the picker with its own options when the answer
carries no ``updated_config``; so the answer is what this node allows and nothing else.
Cloud drives (Google Drive, Dropbox, Box...) need accounts with those services: their
calls get one clear error (docs/filestack.md, "The picker and cloud drives").
"""

from __future__ import annotations

from typing import Any

from stowage import errors
from stowage.core.providers import Providers

PERMISSIONS = {  # features of the hosted service that this node does not offer
    "intelligent_ingestion": False,
    "whitelabel": True,  # no vendor branding to remove
    "transforms_ui": False,
    "enhance": False,
    "advanced_enhance": False,
}


async def prefetch(providers: Providers, body: Any) -> dict[str, Any]:
    """The answer to ``/prefetch``: the app must exist; no option is changed."""
    if not isinstance(body, dict):
        raise errors.InvalidJson("the body must be a JSON object")
    api_key = body.get("apikey")
    if api_key is not None and not isinstance(api_key, str):
        raise errors.InvalidParameter("apikey must be a string", parameter="apikey")
    if not api_key:  # the SDK sends it in the body, not as ``key``
        raise errors.Unauthenticated("the body's apikey (the API key) is required")
    await providers.app(api_key)
    return {
        "blocked": False,
        "settings": {"inapp_browser": False},
        "permissions": dict(PERMISSIONS),
    }


def cloud_drive(call: str) -> errors.StowageError:
    """The error every cloud-drive call answers."""
    return errors.CloudDriveUnavailable(
        f"{call}: cloud drives are not connected to this server; run a connector beside "
        "Stowage (docs/filestack.md, 'The picker and cloud drives')"
    )
