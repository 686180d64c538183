"""A record the target refuses: by default the flow stops and says which and why; with
errors.tolerance = all it is skipped, counted and written to the dead-letter topic."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from mirrorline.admin_client import AdminClient
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    consume,
    consume_to_end,
    create_topic,
    end_offsets,
    produce,
    topic_names,
    unique_name,
)
from support.wait import wait_until


@pytest.mark.parametrize(
    "extra",
    [
        "",
        # The refused record is the last: its real-time task has nothing more to send,
        # and must not wait for its (default: 30-minute) batch to end to say so.
        "data.path.mode = real-time\n",
    ],
    ids=["micro_batch", "real_time"],
)
def test_oversized_record_stops_the_flow_with_a_precise_status(
    two_clusters, spark, tmp_path, extra
):
    east, west = two_clusters
    topic = unique_name("big")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic)
    config = write_config(
        tmp_path / "c.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        # The target's own limit must stay: do not copy max.message.bytes.
        "config.properties.exclude = max\\\\.message\\\\.bytes\n" + extra,
    )
    produce(east.bootstrap_servers, topic, [Record(b"small", b"x" * 100)] * 3)
    with running_driver(config, spark, tmp_path / "w") as driver:
        wait_until(
            lambda: (
                remote in topic_names(west.bootstrap_servers)
                and end_offsets(west.bootstrap_servers, remote) == {0: 3}
            ),
            timeout=60,
            what="the first records",
        )
        _limit_message_size(west.bootstrap_servers, remote, 2000)
        produce(east.bootstrap_servers, topic, [Record(b"big", b"y" * 50_000)])

        status = wait_until(
            lambda: (lambda s: s if s.state == "failed" else None)(driver.statuses()[0]),
            timeout=90,
            what="the flow to fail on the oversized record",
        )
    assert f"{remote}[0]" in status.reason
    assert "source offset 3" in status.reason
    assert "too large" in status.reason.lower()
    # Nothing after the refused record was written, and the three before it stay.
    assert end_offsets(west.bootstrap_servers, remote) == {0: 3}


MODES = {
    "at_least_once": "",
    "exactly_once": "exactly.once.source.support = enabled\n",
    # A batch longer than the test: the refused record is counted, dead-lettered and
    # passed while its real-time task runs.
    "real_time": "data.path.mode = real-time\n",
}


@pytest.mark.parametrize("mode", list(MODES))
def test_tolerant_mode_skips_counts_and_dead_letters_the_refused_record(
    two_clusters, spark, tmp_path, mode
):
    east, west = two_clusters
    topic = unique_name("tolerant")
    remote = f"east.{topic}"
    dead_letters = unique_name("dlq")
    create_topic(east.bootstrap_servers, topic)
    extra = MODES[mode]
    if mode == "real_time":
        # A real-time query keeps the size limits it started with: the target's is
        # there before the flow starts.
        create_topic(west.bootstrap_servers, remote, config={"max.message.bytes": "2000"})
    config = write_config(
        tmp_path / "c.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "config.properties.exclude = max\\\\.message\\\\.bytes\n"
        "errors.tolerance = all\n"
        f"errors.deadletterqueue.topic.name = {dead_letters}\n"
        "errors.deadletterqueue.topic.replication.factor = 1\n" + extra,
    )
    produce(east.bootstrap_servers, topic, [Record(b"small", b"x" * 100)] * 3)
    with running_driver(config, spark, tmp_path / "w") as driver:
        wait_until(
            lambda: (
                remote in topic_names(west.bootstrap_servers)
                and sum(end_offsets(west.bootstrap_servers, remote).values()) >= 3
            ),
            timeout=60,
            what="the first records",
        )
        if mode != "real_time":
            _limit_message_size(west.bootstrap_servers, remote, 2000)
        # Records sharing a record batch with one over a limit the flow has not seen
        # yet are refused with it (see docs/replication.md); wait until it is known.
        wait_until(
            lambda: driver.runners[0].parts.topics.size_limits().get(remote) == 2000,
            timeout=30,
            what="the flow to learn the new max.message.bytes",
        )
        produce(
            east.bootstrap_servers,
            topic,
            [
                Record(b"before", b"a" * 100),
                Record(b"big", b"y" * 50_000, (("app", b"kept"),)),
                Record(b"after", b"b" * 100),
            ],
        )
        status = wait_until(
            lambda: (lambda s: s if s.counters.get("records_refused") == 1 else None)(
                driver.statuses()[0]
            ),
            timeout=90,
            what="the refused record to be counted",
        )
        wait_until(
            lambda: len(consume(west.bootstrap_servers, remote, expected=5, timeout=5)) == 5,
            timeout=60,
            what="the records around the refused one",
        )
        # The progress passes the refused record (a real-time task's next report).
        wait_until(
            lambda: driver.runners[0].parts.committer.committed_offsets().get((topic, 0)) == 6,
            timeout=30,
            what="the progress past the refused record",
        )
    assert status.state == "running", status.reason
    assert status.counters["records_dead_lettered"] == 1
    assert "source offset 4" in status.refusals[-1] and f"{remote}[0]" in status.refusals[-1]

    copies = consume_to_end(west.bootstrap_servers, remote)
    assert [c.key for c in copies] == [b"small"] * 3 + [b"before", b"after"]
    [letter] = consume_to_end(west.bootstrap_servers, dead_letters)
    assert (letter.key, letter.value) == (b"big", b"y" * 50_000)
    headers = {k: v.decode() for k, v in letter.headers}
    assert headers["app"] == "kept"
    assert headers["mirrorline.error.flow"] == "east->west"
    assert headers["mirrorline.error.topic"] == topic
    assert headers["mirrorline.error.partition"] == "0"
    assert headers["mirrorline.error.offset"] == "4"
    assert headers["mirrorline.error.target.topic"] == remote
    assert headers["mirrorline.error.code"] == "MESSAGE_TOO_LARGE"
    assert "too large" in headers["mirrorline.error.message"]


def _limit_message_size(bootstrap: str, topic: str, limit: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry(
        "max.message.bytes", str(limit), incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
