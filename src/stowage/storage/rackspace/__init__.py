"""Rackspace Cloud Files provider: the OpenStack Swift object API, spoken with aiohttp.

Login: ``POST <identity_url>/tokens`` with ``username`` + ``api_key``
(``RAX-KSKEY:apiKeyCredentials``). The account URL is the ``cloudFiles``
endpoint of ``region`` in the service catalogue (``publicURL``, or
``internalURL`` when ``internal`` is true; ``region`` defaults to the user's
default region). The token is renewed shortly before the expiry the identity
service announced, and once more when Swift answers 401.

Writes: a source that ends within ``inline_limit`` bytes (default 8 MiB, held
in memory) is one plain PUT. A longer one is streamed, chunked-encoded, into
segments of at most ``segment_size`` bytes (default 1 GiB) under
``<key>/<upload id>/`` in the ``<container>_segments`` container (created on
demand) and joined by a static large object (SLO) manifest, whose PUT is the
atomic switch. A write that fails deletes the segments it made; the previous
object stays as it was. Overwriting an SLO deletes its old segments once the new
object is in place; ``delete`` removes an SLO together with its segments.
Reads stream, with byte ranges.

A crash mid-write leaves orphan segments; ``sweep_temporary`` deletes those of
uploads older than ``orphan_age`` (default one day) that no manifest uses.

Limits: a reader streaming an SLO while it is overwritten may fail once its
old segments are gone. Objects are capped at ``max_segments``
(default 1000, Swift's own default) x ``segment_size``. The target container
must exist. ``WriteOptions.access`` is ignored: Cloud Files makes whole
containers public (CDN), not single objects. Each write may hold up to
``inline_limit`` bytes in memory.
"""

from stowage.storage.rackspace.auth import parse_access
from stowage.storage.rackspace.provider import RackspaceProvider, build, from_config

__all__ = ["RackspaceProvider", "build", "from_config", "parse_access"]
