"""Telling source records lost to retention from offsets that never held a record."""

from __future__ import annotations

import logging

import pytest

from mirrorline.engine.gaps import GapLedger, RecordGap, lost_range


@pytest.mark.parametrize(
    ("expected", "first_seen", "log_start", "lost"),
    [
        (100, 100, 0, None),  # no jump
        (100, 150, 150, (100, 150)),  # retention deleted 100..149; read from the new start
        (100, 160, 150, (100, 150)),  # deleted up to 150, then 150..159 compacted away
        (100, 150, 170, (100, 150)),  # read 150.., then more was deleted: only the unread lost
        (100, 150, 90, None),  # compaction or transaction markers: the log still starts below
        (100, 150, 100, None),  # the log starts exactly at the expected offset
        (-2, 150, 150, None),  # no expectation yet: the partition starts at its earliest
        (100, 300, 300, (100, 300)),  # an idle partition: everything up to the end deleted
    ],
)
def test_lost_range(expected, first_seen, log_start, lost):
    assert lost_range(expected, first_seen, log_start) == lost


def test_ledger_counts_logs_and_keeps_only_the_latest_gaps(caplog):
    ledger = GapLedger("east->west", keep=2)
    gaps = [RecordGap("orders", 0, 10, 20), RecordGap("orders", 1, 5, 6), RecordGap("a", 2, 0, 3)]
    with caplog.at_level(logging.WARNING, logger="mirrorline.engine.gaps"):
        ledger.record(gaps)
    assert ledger.counters() == {"records_lost": 14, "gaps": 3}
    assert ledger.recent() == tuple(gaps[1:])
    assert len(caplog.records) == 3
    first = caplog.records[0].getMessage()
    assert "flow east->west" in first
    assert "orders[0] offsets 10 to 19 (10 records)" in first
    assert "continuing at offset 20" in first


def test_gap_reads_as_an_inclusive_range():
    gap = RecordGap("orders", 3, 100, 101)
    assert gap.records == 1
    assert str(gap) == "orders[3] offsets 100 to 100 (1 record)"
