"""Deliveries to internal addresses are refused, without a request, unless allowed."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import replace
from pathlib import Path

import pytest

from stowage.config import Settings
from stowage.core.urlguard import is_public
from tests.webhooks.receiver import Harness, Receiver, wait_log


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        access_log=False,
        webhook_retry_base_delay=0.2,
        webhook_poll_interval=0.2,
    )


def internal_hostname() -> str:
    """This machine's own name: it resolves (through /etc/hosts) to a non-public address."""
    name = socket.gethostname()
    addresses = {info[4][0] for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    assert addresses and not any(is_public(ipaddress.ip_address(a)) for a in addresses)
    return name


async def test_internal_addresses_are_refused_without_a_request(
    harness: Harness, receiver: Receiver
) -> None:
    port = receiver.url.split(":")[2].split("/")[0]
    urls = [
        receiver.url,  # 127.0.0.1
        f"http://localhost:{port}/hook",
        f"http://2130706433:{port}/hook",  # 127.0.0.1 as one number
        f"http://[::ffff:127.0.0.1]:{port}/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/hook",
        f"http://{internal_hostname()}:{port}/hook",  # refused where it resolves
    ]
    app = replace(harness.open_app, webhooks=urls)
    await harness.service.registry.update_app(app)
    await harness.store(b"x", app)
    log = await wait_log(harness, len(urls), "failed")
    for d in log:
        assert d.attempts == 1 and d.response_code is None
        assert d.last_error.startswith("refused: "), d.last_error
        assert "address" in d.last_error
    await asyncio.sleep(0.6)  # past two retry delays: nothing is retried
    assert receiver.got == []
    assert {d.status for d in await harness.service.registry.webhook_log()} == {"failed"}
