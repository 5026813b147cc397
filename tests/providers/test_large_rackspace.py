"""A 256 MiB object through the Rackspace provider with flat memory: 4 SLO segments of 64 MiB."""

from __future__ import annotations

from pathlib import Path

from stowage.storage.rackspace import from_config
from tests.providers.large import round_trip
from tests.servers.fx_swift import rackspace_config
from tests.servers.rackspace_identity import RackspaceIdentity


async def test_large_object_bounded_memory(
    rackspace_identity: RackspaceIdentity, tmp_path: Path
) -> None:
    config = rackspace_config(rackspace_identity, segment_size=64 << 20, inline_limit=8 << 20)
    provider = from_config(config, tmp_path)
    try:
        total, growth_mib = await round_trip(provider, 256)
    finally:
        await provider.close()
    print(f"rackspace: {total >> 20} MiB round trip, peak RSS growth {growth_mib:.1f} MiB")
    assert growth_mib < 100
