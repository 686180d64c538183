"""The simulated wide-area link (Toxiproxy) adds the round trip it is set to, and nothing more;
a dev cluster behind it is reached through it by every client."""

from __future__ import annotations

import json
import socket
import socketserver
import struct
import threading
import time
from contextlib import ExitStack

import pytest
from confluent_kafka import Producer
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.devcluster import DevClusters
from mirrorline.devlatency import Link, LinkServer
from mirrorline.process import pid_alive, reserve_port
from support.kafka_io import Record, consume, create_topic, produce, unique_name


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


def _api_versions_ms(port: int, count: int = 5) -> list[float]:
    """Round trips of Kafka ApiVersions requests (v0) on one connection to `port`."""
    client = b"wan-test"
    body = struct.pack(">hhih", 18, 0, 0, len(client)) + client
    times = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(count):
            started = time.monotonic()
            sock.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
            assert len(sock.recv(size, socket.MSG_WAITALL)) == size
            times.append((time.monotonic() - started) * 1000)
    return times


def _produce_acks1_ms(bootstrap: str, topic: str, count: int = 5) -> list[float]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    producer.produce(topic, b"warm-up")  # connects and fetches metadata first
    assert producer.flush(30) == 0
    times = []
    for _ in range(count):
        started = time.monotonic()
        producer.produce(topic, b"x")
        assert producer.flush(30) == 0
        times.append((time.monotonic() - started) * 1000)
    return times


def test_a_dev_cluster_behind_the_link_is_reached_through_it(tmp_path):
    directory = tmp_path / "dev"
    up = CliRunner().invoke(
        app, ["dev", "up", "--clusters", "far", "--latency-ms", "40", "--dir", str(directory)]
    )
    try:
        assert up.exit_code == 0, up.output
        status = CliRunner().invoke(app, ["dev", "status", "--json", "--dir", str(directory)])
        assert status.exit_code == 0, status.output
        [far] = json.loads(status.output)
        link, [node] = far["link"], far["nodes"]
        assert (link["latency_ms"], link["jitter_ms"], link["alive"]) == (40, 0, True)
        assert far["bootstrap_servers"] == f"127.0.0.1:{node['proxy_port']}"
        properties = DevClusters(directory).properties_file.read_text()
        assert f"far.bootstrap.servers = 127.0.0.1:{node['proxy_port']}" in properties

        bootstrap = far["bootstrap_servers"]
        topic = unique_name("wan")
        create_topic(bootstrap, topic, 1)
        produce(bootstrap, topic, [Record(b"k", b"v")])
        assert [r.value for r in consume(bootstrap, topic, expected=1)] == [b"v"]

        produced_ms = _produce_acks1_ms(bootstrap, topic)
        proxied_ms = _api_versions_ms(node["proxy_port"])
        direct_ms = _api_versions_ms(node["port"])
        print(f"produce acks=1 {produced_ms}, ApiVersions proxied {proxied_ms}, direct {direct_ms}")
        assert sorted(produced_ms)[2] >= 38, produced_ms
        assert min(proxied_ms) >= 38, proxied_ms
        assert sorted(direct_ms)[2] < 20, direct_ms

        # `config check` measures the distance and advises on it.
        config = tmp_path / "far.properties"
        config.write_text(
            f"clusters = far, near\nfar.bootstrap.servers = {bootstrap}\n"
            f"near.bootstrap.servers = {bootstrap}\nfar->near.enabled = true\n"
        )
        check = CliRunner().invoke(app, ["config", "check", str(config), "--json"])
        assert check.exit_code == 0, check.output
        flows = {f["name"]: f for f in json.loads(check.output)["flows"]}
        source_link = flows["far->near"]["source_link"]
        assert source_link["source"] == "far" and source_link["round_trip_ms"] >= 38, source_link
        assert any("data.path.mode = real-time" in a for a in source_link["advice"]), source_link
    finally:
        down = CliRunner().invoke(app, ["dev", "down", "--dir", str(directory)])
    assert down.exit_code == 0, down.output
    assert not pid_alive(link["pid"]), "dev down left the link's proxy server running"
