"""The picker module on ``static.<cname>``: ``/picker/<version>/picker.js``, the script
filestack-js's ``client.picker()`` loads (docs/filestack.md, "The picker").

It is not in git: ``scripts/vendor-web`` bundles web/picker/ (on Uppy) with esbuild into
``static/vendor/picker/picker.js``. One build answers for every picker version listed in
``VERSIONS``: the ones the SDK versions Stowage is tested with ask for.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from stowage import errors

MODULE = Path(__file__).parent / "static" / "vendor" / "picker" / "picker.js"
# The pickers the tested SDKs ask for (their config.urls.pickerUrl): filestack-js 4.3.8's,
# and 1.39.15, that of filestack-js 3.51.6, which filestack-react 6.2.0 brings.
VERSIONS = frozenset({"4.5.2", "1.39.15"})


async def picker_module(request: web.Request) -> web.FileResponse:
    version = request.match_info["version"]
    if version not in VERSIONS:
        raise errors.NotFound(
            f"no picker {version} here; this server has {', '.join(sorted(VERSIONS))}"
        )
    if not MODULE.is_file():
        raise errors.NotSupported("the picker module is not installed: run scripts/vendor-web")
    return web.FileResponse(
        MODULE,
        headers={
            "Content-Type": "application/javascript; charset=utf-8",
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "public, max-age=300",
        },
    )
