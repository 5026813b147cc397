"""A 256 MiB object through the Azure provider with flat memory (Azurite)."""

from __future__ import annotations

from stowage.storage.azure import AzureProvider
from tests.providers.large import round_trip


async def test_large_object_bounded_memory(provider_azure: AzureProvider) -> None:
    total, growth_mib = await round_trip(provider_azure, 256)
    print(f"azure: {total >> 20} MiB round trip, peak RSS growth {growth_mib:.1f} MiB")
    assert growth_mib < 100
