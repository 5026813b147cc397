"""Fixtures of tests/multinode; the helpers they use are in cluster.py."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.multinode.cluster import (
    Cluster,
    keep_for_diagnosis,
    start_cluster,
)
from tests.servers.fx_postgres import PostgresServer
from tests.servers.fx_s3 import S3Endpoint


@pytest.fixture(scope="module")
def cluster(
    request: pytest.FixtureRequest, postgres_server: PostgresServer, moto_endpoint: S3Endpoint
) -> Iterator[Cluster]:
    failed_before = request.session.testsfailed
    running = start_cluster(postgres_server, moto_endpoint)
    try:
        yield running
    finally:
        running.stop()
        if request.session.testsfailed > failed_before:
            report = keep_for_diagnosis(running.lb.folder, request.node.name)
            capture = request.config.pluginmanager.getplugin("capturemanager")
            with capture.global_and_fixture_disabled():  # into the CI log, not captured
                print(report)
        shutil.rmtree(running.lb.folder, ignore_errors=True)
