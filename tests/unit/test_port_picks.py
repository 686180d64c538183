"""Ports for local brokers and services come from below the kernel's ephemeral range."""

from __future__ import annotations

import socket
from contextlib import ExitStack
from pathlib import Path

import pytest

from mirrorline.process import free_port, reserve_port


def _ephemeral_start() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_picks_held_under_one_stack_are_distinct_and_below_the_ephemeral_range() -> None:
    with ExitStack() as stack:
        ports = [reserve_port(stack) for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(1024 <= p < _ephemeral_start() for p in ports)


def test_a_held_port_cannot_be_bound_by_anyone_else_until_released() -> None:
    with ExitStack() as stack:
        port = reserve_port(stack)
        with socket.socket() as other, pytest.raises(OSError):
            other.bind(("127.0.0.1", port))
    with socket.socket() as after:
        after.bind(("127.0.0.1", port))


def test_a_free_port_is_bindable_once_returned() -> None:
    port = free_port()
    assert port < _ephemeral_start()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
