"""Micro-batches sized by time: the limit follows what the last batch moved."""

from __future__ import annotations

from mirrorline.config.flow_settings import PaceSettings
from mirrorline.engine.batch_pace import FIRST_RECORDS, FLOOR_PER_PARTITION, BatchPace

FIVE_SECONDS = PaceSettings(duration_s=5.0, max_records=None)


def test_the_first_batch_reads_a_fixed_amount_before_anything_is_measured():
    assert BatchPace(FIVE_SECONDS, partitions=8).limit == FIRST_RECORDS


def test_a_backlog_settles_at_batches_of_about_the_duration():
    """A flow that costs 0.2 s a batch and moves 300,000 records/s besides."""
    pace = BatchPace(FIVE_SECONDS, partitions=8)
    durations = []
    for _ in range(8):
        records = pace.limit
        seconds = 0.2 + records / 300_000
        durations.append(seconds)
        pace.observe(records, seconds)
    assert durations[0] < 1.0  # the first batch: a fraction of a second
    assert all(abs(d - 5.0) < 0.05 for d in durations[-3:]), durations
    assert abs(pace.limit - 0.96 * 5 * 300_000) < 2_000


def test_a_slower_target_makes_smaller_batches():
    pace = BatchPace(FIVE_SECONDS, partitions=8)
    pace.observe(1_500_000, 5.0)
    assert pace.limit == 1_500_000
    pace.observe(1_500_000, 15.0)  # the target slowed down threefold
    assert pace.limit == 500_000


def test_a_stream_that_keeps_up_measures_its_arrival_rate_and_grows_again_on_a_backlog():
    pace = BatchPace(FIVE_SECONDS, partitions=8)
    pace.observe(1_000, 0.2)  # 5,000 records/s arriving
    assert pace.limit == 25_000
    pace.observe(25_000, 0.25)  # a backlog: the batch was full and quick
    assert pace.limit == 500_000


def test_never_below_the_floor_per_partition_nor_above_the_bound():
    pace = BatchPace(FIVE_SECONDS, partitions=200)
    pace.observe(10, 10.0)
    assert pace.limit == 200 * FLOOR_PER_PARTITION
    bounded = BatchPace(PaceSettings(duration_s=5.0, max_records=4_000), partitions=200)
    assert bounded.limit == 4_000
    bounded.observe(4_000, 0.1)
    assert bounded.limit == 4_000


def test_a_batch_that_read_nothing_changes_nothing():
    pace = BatchPace(FIVE_SECONDS, partitions=1)
    pace.observe(0, 3.0)
    assert pace.limit == FIRST_RECORDS
