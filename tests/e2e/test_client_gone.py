"""A client that gives up on a URL source stops its fetch and job (``http/leaving.py``).

Against the real ``stowage serve``: aiohttp's test server cancels a handler when its
client leaves, the production server does not, so only a real server shows the fault.
"""

from __future__ import annotations

import http.client
import http.server
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import pyvips

from tests.servers.stowage_serve import Running, running

PNG = bytes(pyvips.Image.black(30, 20).new_from_image([10, 200, 90]).cast("uchar").pngsave_buffer())


class Origin(http.server.ThreadingHTTPServer):
    trickling = 0
    lock = threading.Lock()


class Answer(http.server.BaseHTTPRequestHandler):
    server: Origin

    def do_GET(self) -> None:
        if self.path != "/trickle":
            self._send(PNG)
            return
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", "10000")
        self.end_headers()
        with self.server.lock:
            self.server.trickling += 1
        try:
            for _ in range(10_000):  # a byte a second, until the fetch is closed
                self.wfile.write(b"\x00")
                self.wfile.flush()
                time.sleep(1)
        except OSError:
            pass
        finally:
            with self.server.lock:
                self.server.trickling -= 1

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def origin() -> Iterator[Origin]:
    site = Origin(("127.0.0.1", 0), Answer)
    site.daemon_threads = True
    threading.Thread(target=site.serve_forever, daemon=True).start()
    yield site
    site.shutdown()


@pytest.fixture
def slow_fetches(tmp_path: Path) -> Iterator[Running]:
    """Two fetch slots, and fetches that may idle a minute (the defaults: 16 and 30 s)."""
    env = {"STOWAGE_FETCH_MAX_CONCURRENT": "2", "STOWAGE_FETCH_READ_TIMEOUT": "60"}
    yield from running(tmp_path / "data", env=env)


def _get(port: int, path: str, timeout: float) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def test_a_client_that_leaves_gives_its_fetch_slot_back(
    slow_fetches: Running, origin: Origin
) -> None:
    """Clients that gave up on sources that trickle in held every fetch slot of the node
    until the fetch's own deadline (15 minutes by default): the next client's source
    waited that long. Their fetches now stop when they leave."""
    serve, key = slow_fetches.server, slow_fetches.key
    source = f"http://127.0.0.1:{origin.server_address[1]}"
    for _ in range(4):
        with pytest.raises((TimeoutError, socket.timeout)):
            _get(serve.cdn_port, f"/{key}/resize=width:10/{source}/trickle", 0.8)
    began = time.monotonic()
    status, body = _get(serve.cdn_port, f"/{key}/resize=width:10/{source}/fast.png", 30)
    assert status == 200 and time.monotonic() - began < 5
    assert pyvips.Image.new_from_buffer(body, "").width == 10
    for _ in range(50):
        if origin.trickling == 0:
            break
        time.sleep(0.1)
    assert origin.trickling == 0  # every abandoned fetch was closed
