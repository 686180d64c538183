"""Pure parts of dev clusters behind a WAN link: ports, listeners, recorded state."""

from __future__ import annotations

import itertools

from mirrorline.devbroker import Layout, listener_settings, plan_layout, server_properties
from mirrorline.devlatency import Link
from mirrorline.devlink import LinkState
from mirrorline.devnode import nodes_of
from mirrorline.devsecurity import DevSecurity
from mirrorline.devstate import DevCluster, properties_text, read_state, write_state


def _layout(brokers: int, link: Link | None) -> Layout:
    ports = itertools.count(20000)
    return plan_layout("east", "/tmp/x/east", brokers, "plaintext", link, lambda: next(ports))


def test_without_a_link_clients_and_brokers_share_the_plaintext_listener():
    layout = _layout(2, None)
    assert layout.link_api_port is None
    node = layout.node(2)
    assert (node.port, node.controller_port, node.internal_port, node.proxy_port) == (
        20002,
        20003,
        None,
        None,
    )
    assert listener_settings(node) == {
        "listeners": "PLAINTEXT://127.0.0.1:20002,CONTROLLER://127.0.0.1:20003",
        "advertised.listeners": "PLAINTEXT://127.0.0.1:20002",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
    }
    assert layout.bootstrap_servers == "127.0.0.1:20000,127.0.0.1:20002"


def test_behind_a_link_clients_are_sent_to_the_proxy_and_brokers_use_their_own_listener():
    layout = _layout(3, Link(50, 5, 1024))
    ports = [p for n in layout.nodes for p in (n.port, n.controller_port)]
    ports += [p for n in layout.nodes for p in (n.internal_port, n.proxy_port)]
    assert len(set(ports + [layout.link_api_port])) == 3 * 4 + 1  # all distinct
    node = layout.node(2)
    settings = server_properties(layout, 2)
    assert settings["listeners"] == (
        f"PLAINTEXT://127.0.0.1:{node.port},INTERNAL://127.0.0.1:{node.internal_port},"
        f"CONTROLLER://127.0.0.1:{node.controller_port}"
    )
    assert settings["advertised.listeners"] == (
        f"PLAINTEXT://127.0.0.1:{node.proxy_port},INTERNAL://127.0.0.1:{node.internal_port}"
    )
    assert settings["inter.broker.listener.name"] == "INTERNAL"
    assert settings["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
    )
    # The controller quorum does not cross the link.
    assert settings["controller.quorum.voters"].split(",")[1] == (
        f"2@127.0.0.1:{node.controller_port}"
    )
    assert layout.bootstrap_servers == ",".join(f"127.0.0.1:{n.proxy_port}" for n in layout.nodes)
    assert Layout.from_json(layout.to_json()) == layout


def test_clients_are_given_the_proxied_addresses(tmp_path):
    layout = _layout(2, Link(40))
    state = LinkState(40, 0, None, layout.link_api_port or 0, 4242)
    cluster = DevCluster("east", "id", layout.directory, nodes_of(layout), link=state)
    proxied = ",".join(f"127.0.0.1:{n.proxy_port}" for n in layout.nodes)
    assert cluster.bootstrap_servers == proxied
    text = properties_text([cluster], DevSecurity.of(tmp_path))
    assert f"east.bootstrap.servers = {proxied}" in text
    write_state(tmp_path / "clusters.json", [cluster])
    [read] = read_state(tmp_path / "clusters.json")
    assert read == cluster
    assert read.link is not None and read.link.link == Link(40)
    assert {n.internal_port for n in read.nodes} == {n.internal_port for n in layout.nodes}
