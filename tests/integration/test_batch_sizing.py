"""Micro-batches are sized by time (`engine.batch_pace`), not by `max.poll.records`.

On a backlog, the first batch reads at most `FIRST_RECORDS`, and the next ones
what the flow moved per second times `micro-batch.duration.ms`: far more. With
`micro-batch.max.records` no batch reads more than that. `max.poll.records`
keeps Kafka's meaning (records per poll) and sizes nothing.
"""

from __future__ import annotations

import threading

from mirrorline.engine.batch_pace import FIRST_RECORDS
from mirrorline.engine.status import BatchStats
from support.driving import running_driver, write_config
from support.kafka_io import Record, create_topic, produce, unique_name
from support.wait import wait_until

PARTITIONS = 4


def _backlog(east, records: int) -> str:
    topic = unique_name("sized")
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    produce(
        east.bootstrap_servers,
        topic,
        [Record(None, b"x" * 20, partition=i % PARTITIONS) for i in range(records)],
    )
    return topic


class _Batches:
    """Every batch the driver's status shows, by id, watched until `stop`."""

    def __init__(self, driver) -> None:
        self._driver = driver
        self.seen: dict[int, BatchStats] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            self._look()

    def _look(self) -> None:
        last = self._driver.statuses()[0].last_batch
        if last is not None:
            self.seen[last.batch_id] = last

    def stop(self) -> None:
        """Stop watching, after one last look: the batch that completed the wait may have
        come after the watcher's last one."""
        self._stop.set()
        self._thread.join(10)
        self._look()


def _replicate(two_clusters, spark, tmp_path, records: int, settings: str) -> dict[int, BatchStats]:
    east, west = two_clusters
    topic = _backlog(east, records)
    config = write_config(
        tmp_path / "sized.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n{settings}",
    )
    with running_driver(config, spark, tmp_path / "work") as driver:
        batches = _Batches(driver)
        try:
            wait_until(
                lambda: driver.statuses()[0].records == records,
                timeout=180,
                what=f"{records:,} records replicated",
            )
        finally:
            batches.stop()
    assert sum(b.records for b in batches.seen.values()) <= records
    return batches.seen


def test_a_backlog_moves_in_few_batches_whatever_max_poll_records_says(
    two_clusters, spark, tmp_path
):
    records = 3 * FIRST_RECORDS
    # 20 s per batch: however slow this machine, the second batch may read more than
    # the first. MM2's default poll: it once sized batches at 500 records a partition.
    seen = _replicate(
        two_clusters,
        spark,
        tmp_path,
        records,
        "max.poll.records = 500\nmicro-batch.duration.ms = 20000\n",
    )
    assert max(b.records for b in seen.values()) > FIRST_RECORDS, seen
    assert max(seen) < 4, f"{max(seen) + 1} batches for {records:,} records"


def test_micro_batch_max_records_bounds_every_batch(two_clusters, spark, tmp_path):
    seen = _replicate(two_clusters, spark, tmp_path, 24_000, "micro-batch.max.records = 3000\n")
    assert all(b.records <= 3_000 for b in seen.values()), seen
    assert max(seen) >= 7, f"only {max(seen) + 1} batches for 24,000 records"
