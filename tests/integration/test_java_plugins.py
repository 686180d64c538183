"""An MM2 file's own Java policy and filters, end to end on real clusters and Spark.

One driver run of the flow east->west with a replication policy that names
remote topics `<topic>_from_<source>`, a topic filter and a group filter that
select names by a prefix they read from the file, and a config property
filter that copies retention settings only (`support/java_plugins.py`). It
checks what lands on west, that a run-time allow list still selects a topic
the class refuses, that the remote names are those MM2 builds from the same
properties with the same class, and that the group's checkpoints translate
with the custom names through `mirrorline.client` and MM2's RemoteClusterUtils.
"""

from __future__ import annotations

from confluent_kafka.admin import ConfigResource, ResourceType
from typer.testing import CliRunner

from mirrorline import client
from mirrorline.cli.main import app
from mirrorline.config import load_config
from support.control import reset_control
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    admin,
    commit_offsets,
    create_topic,
    end_offsets,
    produce,
    topic_names,
    unique_name,
)
from support.mm2_java import java_remote_names, java_translate_offsets
from support.wait import wait_until

POLICY = "example.mirror.SuffixReplicationPolicy"


def test_java_policy_and_filters_decide_what_lands_on_the_target(
    two_clusters, spark, tmp_path, plugin_jar
):
    east, west = two_clusters
    p = unique_name("jp")
    chosen, refused, allowed = f"{p}orders", f"x{p}refused", f"x{p}allowed"
    group, other_group = f"{p}billing", f"x{p}audit"
    create_topic(east.bootstrap_servers, chosen, partitions=2,
                 config={"retention.ms": "7200000", "max.message.bytes": "200000"})  # fmt: skip
    for topic in (refused, allowed):
        create_topic(east.bootstrap_servers, topic)
    produce(east.bootstrap_servers, chosen,
            [Record(b"k", f"{i}".encode(), (), None, i % 2) for i in range(40)])  # fmt: skip
    produce(east.bootstrap_servers, refused, [Record(b"k", b"v")] * 5)
    produce(east.bootstrap_servers, allowed, [Record(b"k", b"v")] * 3)
    commit_offsets(east.bootstrap_servers, group, chosen, {0: 12, 1: 20})
    commit_offsets(east.bootstrap_servers, other_group, chosen, {0: 5})
    config_file = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\n"
        f"plugin.path = {plugin_jar}\n"
        f"replication.policy.class = {POLICY}\n"
        "topic.filter.class = example.mirror.PrefixTopicFilter\n"
        "group.filter.class = example.mirror.PrefixGroupFilter\n"
        "config.property.filter.class = example.mirror.RetentionOnlyConfigFilter\n"
        f"east->west.prefix.filter.allow = {p}\n"
        "emit.checkpoints.interval.seconds = 1\n"
        "refresh.groups.interval.seconds = 1\n",
    )
    flow = load_config(config_file).flow("east", "west")
    remote = f"{chosen}_from_east"
    # MM2 builds the same class from the same properties and names topics alike.
    properties = {"replication.policy.class": POLICY}
    assert (
        java_remote_names("east", [chosen, allowed], properties, [plugin_jar])
        == [
            flow.remote_topic(chosen),
            flow.remote_topic(allowed),
        ]
        == [remote, f"{allowed}_from_east"]
    )

    try:
        with running_driver(config_file, spark, tmp_path / "work"):
            wait_until(
                lambda: (
                    sum(end_offsets(west.bootstrap_servers, remote).values()) == 40
                    if remote in topic_names(west.bootstrap_servers)
                    else None
                ),
                timeout=120,
                what=f"40 records in {remote} on west",
            )
            # The config property filter copied retention.ms, not max.message.bytes.
            west_admin = admin(west.bootstrap_servers)
            described = west_admin.describe_configs([ConfigResource(ResourceType.TOPIC, remote)])
            (configs,) = [f.result(30) for f in described.values()]
            assert configs["retention.ms"].value == "7200000"
            assert configs["max.message.bytes"].value != "200000"

            # An operator allows a topic the class refuses: it is replicated at once.
            added = CliRunner().invoke(
                app,
                ["topics", "-c", str(config_file), "-s", "east", "-t", "west", "--add", allowed],
            )
            assert added.exit_code == 0, added.output
            assert "chosen by example.mirror.PrefixTopicFilter" in added.output
            wait_until(
                lambda: f"{allowed}_from_east" in topic_names(west.bootstrap_servers) or None,
                timeout=60,
                what="the topic allowed at run time on west",
            )

            # Checkpoints of the group the class selects, under the custom names.
            mirror = client.MirrorClient.from_config(config_file, "west")
            expected = {(remote, 0): 12, (remote, 1): 20}
            wait_until(
                lambda: (
                    {k: t.offset for k, t in mirror.translate_offsets("east", group).items()}
                    == expected
                    or None
                ),
                timeout=60,
                what=f"{group}'s checkpoints translated on west",
            )
            assert mirror.translate_offsets("east", other_group) == {}
        assert not [t for t in topic_names(west.bootstrap_servers) if refused in t]
        jars = [plugin_jar]
        assert java_translate_offsets(west.bootstrap_servers, "east", group, properties, jars) == (
            expected
        )
    finally:
        reset_control(west, "east->west")
