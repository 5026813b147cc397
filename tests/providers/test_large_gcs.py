"""A 256 MiB object through the GCS provider with flat memory (gcp-storage-emulator)."""

from __future__ import annotations

from stowage.storage.gcs import GcsProvider
from tests.providers.large import round_trip


async def test_large_object_bounded_memory(provider_gcs: GcsProvider) -> None:
    total, growth_mib = await round_trip(provider_gcs, 256)
    print(f"gcs: {total >> 20} MiB round trip, peak RSS growth {growth_mib:.1f} MiB")
    assert growth_mib < 100
