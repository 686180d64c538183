"""A dev cluster of three nodes behaves like a production one through a broker outage:
`dev stop --broker` of a partition leader, `dev start`, `dev restart` of another node (which
moves leadership back to the preferred replicas)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mirrorline.admin_client import AdminClient
from mirrorline.cli.main import app
from mirrorline.devcluster import DevClusters
from mirrorline.devhealth import under_replicated
from support.kafka_io import Record, consume, create_topic, produce, unique_name
from support.wait import wait_until

ALIAS = "trio"


def test_three_nodes_keep_writing_through_a_node_outage_and_a_restart(tmp_path):
    directory = tmp_path / "dev"
    dev = DevClusters(directory)
    (cluster,) = dev.up([ALIAS], brokers=3, die_with_parent=True)

    def cli(*args: str, code: int = 0) -> str:
        result = CliRunner().invoke(app, ["dev", *args, "--dir", str(directory)])
        assert result.exit_code == code, result.output
        return result.output

    try:
        addresses = [f"127.0.0.1:{n.port}" for n in cluster.nodes]
        assert cluster.bootstrap_servers == ",".join(addresses)
        assert f"{ALIAS}.bootstrap.servers = {','.join(addresses)}" in (
            dev.properties_file.read_text()
        )
        assert dev.active_controller(ALIAS) in (1, 2, 3)
        config = dev.client_config(ALIAS)
        topic = unique_name("replicated")
        create_topic(config, topic, 2, replication_factor=-1)
        admin = AdminClient(config)

        def replica_counts() -> list[int]:
            # A node other than the one that created the topic may not know it yet.
            partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
            return [len(p.replicas) for p in partitions.values()]

        wait_until(lambda: len(replica_counts()) == 2, timeout=30, what=f"{topic}'s metadata")
        assert replica_counts() == [3, 3]  # the default factor

        acks_all = {"acks": "all"}
        produce(config, topic, [Record(b"before", b"%d" % i, partition=i % 2) for i in range(50)])
        victim = dev.leader_of(ALIAS, topic, 0)
        assert "stopped node" in cli("stop", ALIAS, "--broker", str(victim))

        status = json.loads(cli("status", "--json", code=1))[0]
        states = {n["id"]: n["state"] for n in status["nodes"]}
        assert states == {n: "stopped" if n == victim else "up" for n in (1, 2, 3)}
        new_leader = wait_until(
            lambda: (leader := dev.leader_of(ALIAS, topic, 0)) != victim and leader,
            timeout=30,
            what=f"a leader other than node {victim} for {topic}[0]",
        )
        # Two replicas of three are in sync: min.insync.replicas=2 still lets acks=all write.
        produce(
            config,
            topic,
            [Record(b"during", b"%d" % i, partition=i % 2) for i in range(50)],
            acks_all,
        )
        cli("start", ALIAS, "--broker", str(victim))

        other = next(n for n in (1, 2, 3) if n not in (victim, new_leader))
        output = cli("restart", ALIAS, "--broker", str(other))
        assert "no under-replicated partitions" in output
        assert "moved back to their preferred replicas" in output
        assert under_replicated(config) == []
        # Both nodes taken away lead their preferred partitions again, the stopped one too.
        # The broker that answers may learn of the elections a moment after the command.
        wait_until(
            lambda: all(
                p.leader == p.replicas[0]
                for p in admin.list_topics(topic, timeout=10).topics[topic].partitions.values()
            ),
            timeout=30,
            what=f"every partition of {topic} led by its preferred replica",
        )
        produce(config, topic, [Record(b"after", b"%d" % i, partition=i % 2) for i in range(50)])

        records = consume(config, topic, expected=150)
        assert sorted((r.key, int(r.value)) for r in records) == sorted(
            (phase, i) for phase in (b"before", b"during", b"after") for i in range(50)
        )
        status = json.loads(cli("status", "--json"))[0]
        assert status["up"] and [n["id"] for n in status["nodes"]] == [1, 2, 3]
        assert all(n["process_alive"] and n["reachable"] for n in status["nodes"])
    finally:
        # Also stops the nodes the CLI started again, which do not die with this process.
        dev.down()
