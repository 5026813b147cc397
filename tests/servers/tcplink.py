"""A loopback TCP forwarder that a test can cut: ``down()`` refuses new connections and
drops open ones, ``hang()`` accepts but never answers, ``up()`` forwards again. Stands
for the network between a node and a cache that goes away. ``delay`` holds each answer
(a slow origin)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass, field

from tests.servers.ports import free_port


@dataclass
class Link:
    target_port: int
    port: int = field(default_factory=free_port)
    forwarding: bool = True
    delay: float = 0.0  # seconds each answer is held before it is passed on
    _server: socket.socket | None = None
    _open: set[socket.socket] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        self.forwarding = True
        self._listen()

    def hang(self) -> None:
        self._drop()
        self.forwarding = False
        self._listen()

    def down(self) -> None:
        self._drop()
        if self._server is not None:
            self._server.shutdown(socket.SHUT_RDWR)
            self._server.close()
            self._server = None

    def _listen(self) -> None:
        if self._server is None:
            self._server = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
            threading.Thread(target=self._accept, args=(self._server,), daemon=True).start()

    def _drop(self) -> None:
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            with self._lock:
                self._open.add(client)
            if not self.forwarding:
                continue  # held open, never answered
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self._open.add(upstream)
            for a, b, delay in ((client, upstream, 0.0), (upstream, client, self.delay)):
                threading.Thread(target=_pump, args=(a, b, delay), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket, delay: float) -> None:
    try:
        while data := source.recv(65536):
            if delay:
                time.sleep(delay)
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
