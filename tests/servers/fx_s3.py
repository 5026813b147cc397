"""S3 servers for the tests: moto (strict S3 semantics, in memory) and Swift's s3api.

moto is started here, once per session, on a free port of 127.0.0.1 (installed by
``scripts/setup.d/10-moto.sh``). The Swift all-in-one is started by ``fx_swift.py``;
this module only points the S3 provider at its s3api endpoint.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config
from botocore.session import get_session

from stowage.storage.s3 import S3Provider, from_config
from tests.servers.ports import free_port, wait_listening

PROVIDER_FIXTURES = ["s3_moto", "s3_swift"]

BUCKET = "stowage-test"
# Not the Rackspace tests' container, which lives in the same Swift account.
SWIFT_BUCKET = "stowage-s3-test"


@dataclass(frozen=True)
class S3Endpoint:
    url: str
    access_key: str
    secret_key: str
    bucket: str = BUCKET

    def config(self, **overrides: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "type": "s3",
            "bucket": self.bucket,
            "endpoint_url": self.url,
            "region": "us-east-1",
            "access_key_id": self.access_key,
            "secret_access_key": self.secret_key,
        }
        base.update(overrides)
        return base

    def client(self) -> Any:
        """A plain botocore client, for set-up and for checks the provider does not expose."""
        return get_session().create_client(
            "s3",
            region_name="us-east-1",
            endpoint_url=self.url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            config=Config(
                s3={"addressing_style": "path"},
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
                retries={"total_max_attempts": 1},
            ),
        )


def start_moto(log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Starts moto_server on a free port; the caller stops it with ``stop``."""
    moto_bin = Path(sys.executable).parent / "moto_server"
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(moto_bin), "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_listening(port, proc, log, 30, "moto_server")
    except BaseException:
        stop(proc)
        raise
    return proc, port


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def make_bucket(endpoint: S3Endpoint) -> None:
    client = endpoint.client()
    try:
        client.create_bucket(Bucket=endpoint.bucket)
    except client.exceptions.BucketAlreadyOwnedByYou:
        pass
    finally:
        client.close()


@pytest.fixture(scope="session")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Endpoint]:
    proc, port = start_moto(tmp_path_factory.mktemp("moto") / "moto.log")
    try:
        endpoint = S3Endpoint(f"http://127.0.0.1:{port}", "testing", "testing")
        make_bucket(endpoint)
        yield endpoint
    finally:
        stop(proc)


@pytest.fixture
async def provider_s3_moto(moto_endpoint: S3Endpoint, tmp_path: Path) -> AsyncIterator[S3Provider]:
    provider = from_config(moto_endpoint.config(), tmp_path)
    yield provider
    await provider.close()


@pytest.fixture
def storage_config_s3_moto(moto_endpoint: S3Endpoint) -> tuple[str, dict[str, Any]]:
    return "S3", moto_endpoint.config()


@pytest.fixture(scope="session")
def swift_endpoint(swift_server: Any) -> S3Endpoint:
    """Swift's s3api on the all-in-one of ``fx_swift.py``, with the test bucket made."""
    endpoint = S3Endpoint(
        swift_server.s3_endpoint,
        swift_server.s3_access_key,
        swift_server.s3_secret_key,
        SWIFT_BUCKET,
    )
    make_bucket(endpoint)
    return endpoint


@pytest.fixture
async def provider_s3_swift(
    swift_endpoint: S3Endpoint, tmp_path: Path
) -> AsyncIterator[S3Provider]:
    provider = from_config(swift_endpoint.config(), tmp_path)
    yield provider
    await provider.close()


@pytest.fixture
def storage_config_s3_swift(swift_endpoint: S3Endpoint) -> tuple[str, dict[str, Any]]:
    return "S3", swift_endpoint.config()
