"""Single message transforms: the same MM2 file run by MirrorMaker 2 and by Mirrorline
gives the same records on each target; dropped records keep translation exact; a
transform that throws stops the flow or dead-letters the record."""

from __future__ import annotations

import subprocess
from pathlib import Path

from mirrorline import jvm
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    by_partition,
    checkpoints_of,
    commit_offsets,
    consume,
    consume_to_end,
    create_topic,
    produce,
    recent_timestamp,
    unique_name,
)
from support.wait import wait_until

SMT = "org.apache.kafka.connect.transforms."
SIMPLE_HEADERS = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
# MM2's Kafka Connect runtime on single-broker clusters.
MM2_LINES = (
    "config.storage.replication.factor = 1\n"
    "offset.storage.replication.factor = 1\n"
    "status.storage.replication.factor = 1\n"
    "tasks.max = 1\n"
    "sync.topic.acls.enabled = false\n"
)


def _chain(flow: str, routed_source: str) -> str:
    """InsertHeader, DropHeaders, a Filter guarded by HasHeaderKey, and a RegexRouter.

    At the flow level: MM2 hands a connector the `transforms.*` lines of its own flow
    only (of the global ones it keeps `transforms` and `predicates`, not the rest).
    """
    lines = (
        "transforms = tag, strip, skip, route\n"
        f"transforms.tag.type = {SMT}InsertHeader\n"
        "transforms.tag.header = mirrored.by\n"
        "transforms.tag.value.literal = smt-test\n"
        f"transforms.strip.type = {SMT}DropHeaders\n"
        "transforms.strip.headers = secret\n"
        f"transforms.skip.type = {SMT}Filter\n"
        "transforms.skip.predicate = marked\n"
        "predicates = marked\n"
        f"predicates.marked.type = {SMT}predicates.HasHeaderKey\n"
        "predicates.marked.name = skip\n"
        f"transforms.route.type = {SMT}RegexRouter\n"
        f"transforms.route.regex = east[.]({routed_source})\n"
        "transforms.route.replacement = $1.routed\n"
    )
    return "".join(f"{flow}.{line}\n" for line in lines.splitlines())


def _start_mm2(config: Path, target: str, log: Path) -> subprocess.Popen:
    command = [
        jvm.java_executable(),
        "-Xmx512m",
        "-cp",
        jvm.classpath("mirrormaker"),
        "org.apache.kafka.connect.mirror.MirrorMaker",
        str(config),
        "--clusters",
        target,
    ]
    with log.open("w") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)


def test_mirrormaker_and_mirrorline_copy_the_same_transformed_records(
    three_clusters, spark, tmp_path
):
    east, west, central = three_clusters
    filtered, routed = unique_name("smt"), unique_name("smtroute")
    create_topic(east.bootstrap_servers, filtered, partitions=2)
    create_topic(east.bootstrap_servers, routed)
    for target in (west, central):  # neither tool creates the topic a router names
        create_topic(target.bootstrap_servers, f"{routed}.routed")
    ts = recent_timestamp(60_000)
    skip = (("skip", b"1"),)
    produce(
        east.bootstrap_servers,
        filtered,
        [
            Record(b"k0", b"v0", (("keep", b"\x00\xff"), ("secret", b"s")), ts, 0),
            Record(b"k1", b"v1", skip, ts + 1, 0),  # dropped: offsets 1 and 2
            Record(b"k2", b"v2", (("keep", b"x"), *skip), ts + 2, 0),
            Record(b"k3", None, (), ts + 3, 0),  # a tombstone
            Record(b"k4", b"v4", (("keep", b"text"),), ts + 4, 0),
            Record(None, b"v5", (), ts + 5, 1),
            Record(b"k6", b"v6", skip, ts + 6, 1),
            Record(b"k7", b"v7", (("secret", b"s"),), ts + 7, 1),
        ],
    )
    produce(
        east.bootstrap_servers,
        routed,
        [Record(b"r0", b"w0", skip, ts, 0), Record(b"r1", b"w1", (), ts + 1, 0)],
    )
    group = unique_name("smtgroup")
    commit_offsets(east.bootstrap_servers, group, filtered, {0: 2})  # inside the dropped range
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west, central],
        "east->west.enabled = true\neast->central.enabled = true\n"
        f"topics = {filtered}, {routed}\ngroups = {group}\n"
        "emit.checkpoints.interval.seconds = 1\nrefresh.groups.interval.seconds = 1\n"
        + MM2_LINES
        + f"header.converter = {SIMPLE_HEADERS}\n"
        + _chain("east->west", routed)
        + _chain("east->central", routed),
    )
    remote = f"east.{filtered}"
    mm2 = _start_mm2(config, "central", tmp_path / "mm2.log")
    try:
        with running_driver(config, spark, tmp_path / "w", clusters=["west"]) as driver:
            for cluster in (west, central):
                wait_until(
                    lambda c=cluster: (
                        mm2.poll() is None
                        and len(consume(c.bootstrap_servers, remote, expected=5, timeout=2)) == 5
                        and len(consume(c.bootstrap_servers, f"{routed}.routed", expected=1,
                                        timeout=2)) == 1
                    ),
                    timeout=120,
                    what=f"the transformed records on {cluster.alias} (log: {tmp_path}/mm2.log)",
                )  # fmt: skip
            checkpoint = wait_until(
                lambda: checkpoints_of(west.bootstrap_servers, "east", group, remote).get(0),
                timeout=60,
                what="the group's checkpoint",
            )
            status = driver.statuses()[0]
    finally:
        mm2.terminate()
        mm2.wait(60)

    copies = {
        c.alias: (
            by_partition(consume_to_end(c.bootstrap_servers, remote)),
            by_partition(consume_to_end(c.bootstrap_servers, f"{routed}.routed")),
        )
        for c in (west, central)
    }
    assert copies["west"] == copies["central"]  # record by record, partition by partition
    tag = ("mirrored.by", b"smt-test")
    # Source headers as MM2 writes them with SimpleHeaderConverter: bytes in Base64.
    assert copies["west"][0] == {
        0: [
            (b"k0", b"v0", (("keep", b"AP8="), tag), ts),
            (b"k3", None, (tag,), ts + 3),
            (b"k4", b"v4", (("keep", b"dGV4dA=="), tag), ts + 4),
        ],
        1: [(None, b"v5", (tag,), ts + 5), (b"k7", b"v7", (tag,), ts + 7)],
    }
    assert copies["west"][1] == {0: [(b"r1", b"w1", (tag,), ts + 1)]}
    assert status.state == "running", status.reason
    assert status.counters["records_dropped_by_transforms"] == 4
    assert status.counters["records_routed_by_transforms"] == 1
    # Committed at source offset 2 (offsets 1-2 dropped): the next copied record is
    # source offset 3, at target offset 1.
    assert (checkpoint.upstream_offset, checkpoint.downstream_offset) == (2, 1)


def test_a_transform_that_throws_stops_the_flow_or_dead_letters_the_record(
    three_clusters, spark, tmp_path
):
    east, west, central = three_clusters
    topic, stops, dead_letters = unique_name("smtboom"), unique_name("smtstop"), unique_name("dlq")
    # ExtractField needs a struct: it throws on bytes. Only records marked "boom" get it.
    chain = (
        "transforms = extract\n"
        f"transforms.extract.type = {SMT}ExtractField$Value\n"
        "transforms.extract.field = id\n"
        "transforms.extract.predicate = boom\n"
        "predicates = boom\n"
        f"predicates.boom.type = {SMT}predicates.HasHeaderKey\n"
        "predicates.boom.name = boom\n"
    )
    for name in (topic, stops):
        create_topic(east.bootstrap_servers, name)
        produce(
            east.bootstrap_servers,
            name,
            [Record(b"a", b"1"), Record(b"b", b"2", (("boom", b"!"),)), Record(b"c", b"3")],
        )
    # Tolerated: at least once into west, exactly once into central, in one driver.
    config = write_config(
        tmp_path / "c.properties",
        [east, west, central],
        "east->west.enabled = true\neast->central.enabled = true\n"
        "east->central.exactly.once.source.support = enabled\n"
        f"topics = {topic}\n" + chain + "errors.tolerance = all\n"
        f"errors.deadletterqueue.topic.name = {dead_letters}\n"
        "errors.deadletterqueue.topic.replication.factor = 1\n",
    )
    with running_driver(config, spark, tmp_path / "all") as driver:
        wait_until(
            lambda: all(s.counters.get("records_dead_lettered") == 1 for s in driver.statuses()),
            timeout=90,
            what="the record the transform failed on to be dead-lettered by both flows",
        )
        statuses = driver.statuses()
    for cluster, status in zip((west, central), statuses, strict=True):
        assert status.flow == f"east->{cluster.alias}"
        copies = consume_to_end(cluster.bootstrap_servers, f"east.{topic}")
        assert [c.key for c in copies] == [b"a", b"c"], status.flow
        [letter] = consume_to_end(cluster.bootstrap_servers, dead_letters)
        headers = dict(letter.headers)
        assert (letter.key, letter.value) == (b"b", b"2")
        assert headers["mirrorline.error.code"] == b"TRANSFORM_FAILED"
        assert headers["mirrorline.error.offset"] == b"1"
        assert b"transform extract failed" in headers["mirrorline.error.message"]
        assert "transform extract failed" in status.refusals[-1]

    stopping = write_config(
        tmp_path / "none.properties",
        [east, west],
        f"east->west.enabled = true\ntopics = {stops}\n" + chain,
    )
    with running_driver(stopping, spark, tmp_path / "none") as driver:
        failed = wait_until(
            lambda: (lambda s: s if s.state == "failed" else None)(driver.statuses()[0]),
            timeout=90,
            what="the flow to stop on the record the transform failed on",
        )
    assert f"{stops}[0] offset 1" in failed.reason, failed.reason
    assert "transform extract failed" in failed.reason, failed.reason
    # Nothing from the failed record on (the record before it may be there or not yet).
    copied = consume_to_end(west.bootstrap_servers, f"east.{stops}")
    assert [c.key for c in copied] in ([], [b"a"])
