"""Fetching a jar set for real with PySpark's Ivy, and what a host that cannot fetch is told."""

from __future__ import annotations

import socket

import pytest

from mirrorline import jar_fetch, jvm


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_host_that_cannot_reach_the_repository_is_told_every_way(tmp_path, monkeypatch):
    monkeypatch.setenv(jar_fetch.REPOSITORY_ENV, f"http://127.0.0.1:{_closed_port()}/maven2/")
    with pytest.raises(jvm.JvmSetupError) as raised:
        jar_fetch.ensure("spark-kafka", tmp_path / "cache")
    message = str(raised.value)
    assert "cannot fetch Spark's Kafka connector" in message
    assert "spark-sql-kafka-0-10_2.13" in message
    assert "`mirrorline setup`" in message
    assert jar_fetch.REPOSITORY_ENV in message
    assert "MIRRORLINE_JVM_LIB" in message and "--jvm-lib" in message
    # Nothing half-fetched stays behind to be taken for a complete set.
    assert not (tmp_path / "cache" / "spark-kafka").exists()
    assert not jar_fetch.is_complete("spark-kafka", tmp_path / "cache")
