"""The simulated wide-area link (Toxiproxy) adds the round trip it is set to, and nothing more."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from contextlib import ExitStack

import pytest

from mirrorline.devlatency import Link, LinkServer
from mirrorline.process import reserve_port


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture
def echo():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _round_trips_ms(port: int, count: int = 5) -> list[float]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times = []
        for _ in range(count):
            started = time.monotonic()
            sock.sendall(b"ping")
            assert sock.recv(16) == b"ping"
            times.append((time.monotonic() - started) * 1000)
    return times


def test_the_link_adds_its_round_trip(echo, tmp_path):
    with ExitStack() as ports:
        api, far, near = (reserve_port(ports) for _ in range(3))
    server = LinkServer.start(api, tmp_path / "toxiproxy.log", die_with_parent=True)
    try:
        server.forward("far", far, echo, Link(latency_ms=50, jitter_ms=0))
        server.forward("near", near, echo, Link(latency_ms=0))
        far_ms, near_ms = _round_trips_ms(far), _round_trips_ms(near)
        print(f"round trips: far {far_ms}, near {near_ms}")
        assert min(far_ms) >= 50 and sorted(far_ms)[2] < 150, far_ms
        assert sorted(near_ms)[2] < 20, near_ms
        assert set(server.proxies()) == {"far", "near"}
    finally:
        server.stop()
    assert not server.alive()
