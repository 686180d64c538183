"""The service's reader of a target cluster gets a new consumer when its consumer stops
reading a partition that holds records, and not while it reads everything there is.

The stall is made by pausing the partition on the collector's consumer: that
consumer then fetches nothing more from it, as a librdkafka consumer that lost
a partition after a broker restart does, while the cluster answers. The first
new consumer is made to stall as well, at the same offset, as one made while
the partition's leadership still settles can: it is replaced in turn.
"""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from mirrorline.formats import Heartbeat
from mirrorline.service import collector as collector_module
from mirrorline.service.collector import Sources, TargetCollector
from support.kafka_io import Record, conf, create_topic, produce, unique_name
from support.wait import wait_until

FLOW = "east->west"


@pytest.fixture
def quick_stalls(monkeypatch):
    """A stall after 3 s without a record read, looked for every second."""
    monkeypatch.setattr(collector_module, "STALL_S", 3.0)
    monkeypatch.setattr(collector_module, "STALL_CHECK_S", 1.0)


class StallingConsumer(Consumer):
    """A real consumer; the next `stalling` ones made pause what they are assigned."""

    stalling = 0

    def incremental_assign(self, partitions):
        super().incremental_assign(partitions)
        if StallingConsumer.stalling > 0:
            StallingConsumer.stalling -= 1
            self.pause(partitions)


def _beat(west, topic: str) -> int:
    """Write one heartbeat of `FLOW` now; its time."""
    beat = Heartbeat("east", "west", int(time.time() * 1000))
    produce(west.bootstrap_servers, topic, [Record(beat.key(), beat.value(), partition=0)])
    return beat.timestamp


def _newest(collector: TargetCollector) -> int | None:
    return collector.view.read(lambda v: v.heartbeats.get(FLOW))


def test_a_stalled_partition_is_read_on_by_a_new_consumer(
    two_clusters, quick_stalls, monkeypatch, caplog
):
    _, west = two_clusters
    monkeypatch.setattr(collector_module, "Consumer", StallingConsumer)
    topic = unique_name("beats")
    create_topic(west.bootstrap_servers, topic, partitions=1)
    first = _beat(west, topic)
    collector = TargetCollector(
        "west",
        admin_settings=conf(west.bootstrap_servers),
        consumer_settings=conf(west.bootstrap_servers),
        sources=Sources(heartbeats=frozenset({topic}), checkpoints={}, aliases=frozenset({"east"})),
        history_s=60,
    )
    collector.start()
    try:
        wait_until(lambda: _newest(collector) == first, timeout=60, what="the first heartbeat")
        reading = collector._consumer
        # Read to its end, a partition never stalls: the consumer stays for twice the
        # stall time (a check that nothing happens, not a wait for something).
        idle_until = time.monotonic() + 2 * collector_module.STALL_S
        while time.monotonic() < idle_until:
            assert collector._consumer is reading, "a new consumer without a stall"
            time.sleep(0.2)

        reading.pause([TopicPartition(topic, 0)])
        monkeypatch.setattr(StallingConsumer, "stalling", 1)  # undone after the test
        with caplog.at_level(logging.WARNING, logger="mirrorline.service.collector"):
            newest = _beat(west, topic)
            wait_until(
                lambda: _newest(collector) == newest,
                timeout=60,
                what="the heartbeat written after the stall, read by a new consumer",
            )
        assert collector._consumer is not reading
        warnings = [m for r in caplog.records if "stopped with records" in (m := r.getMessage())]
        assert len(warnings) == 2, warnings  # the first new consumer stalled as well
        assert all(f"{topic}[0] at 1 of 2" in w for w in warnings), warnings
    finally:
        collector.close()
