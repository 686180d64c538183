"""RemoteAccess.get against peers that do not answer in HTTP."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from mirrorline.service.remote_http import RemoteAccess, RemoteFailed


@pytest.fixture
def garbage_server() -> Iterator[str]:
    """A loopback listener that answers one connection with bytes that are not HTTP."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve_once() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(b"\x00\x00\x00\x10 PLAINTEXT\r\n\r\n")

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/api/v1/replications"
    thread.join(5)
    listener.close()


def test_an_answer_that_is_not_http_is_a_remote_failure(garbage_server: str) -> None:
    with pytest.raises(RemoteFailed, match="not HTTP"):
        RemoteAccess().get(garbage_server)
