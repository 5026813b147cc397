"""The CDN URL forms the Filestack SDKs build, parsed by the one grammar of the CDN
path (``stowage.processing.grammar``, which reads every task against the task table).

    /<HANDLE>                                   /<HANDLE>/metadata
    /security=p:<policy>,s:<signature>/<HANDLE>                    (python)
    /<APIKEY>/security=signature:<sig>,policy:<policy>/<HANDLE>    (js; a policy holding
                                                 "/" or "," comes in double quotes)
    /cache=false/<HANDLE>   /cache=expiry:<seconds>/<HANDLE>   and combinations
    /<APIKEY>/<tasks>/https://...                (an external source)
"""

from __future__ import annotations

from stowage.processing.grammar import CdnPath, DebugAsk, debug_asked
from stowage.processing.grammar import parse_path as parse

__all__ = ["CdnPath", "DebugAsk", "debug_asked", "parse"]
