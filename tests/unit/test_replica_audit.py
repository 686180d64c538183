"""The crash tests' audit tells a correct at-least-once replica from a broken one."""

from __future__ import annotations

from support.replica_audit import RecordLog, audit_partition, content_digest, sequence_of


def _source(count: int, start_offset: int = 0) -> RecordLog:
    log = RecordLog()
    for seq in range(count):
        log.append(start_offset + seq, seq, content_digest(b"k", b"%d:" % seq, None, 1000 + seq))
    return log


def _replica(source: RecordLog, indexes: list[int]) -> RecordLog:
    """A replica holding the source records at `indexes`, at offsets 0, 1, 2, ..."""
    log = RecordLog()
    for offset, i in enumerate(indexes):
        log.append(offset, source.seqs[i], source.digests[i])
    return log


def test_exact_copy_has_no_duplicates_and_no_problems():
    source = _source(10)
    audit = audit_partition(0, source, _replica(source, list(range(10))), [])
    assert (audit.lost, audit.duplicates, audit.problems) == (0, [0], [])
    assert audit.replicated == audit.records == 10


def test_re_read_runs_at_restarts_are_charged_to_the_crashed_start_that_wrote_them_first():
    source = _source(10)
    # First start writes 0..5, the second goes back to 3, the third back to 7.
    replica = _replica(source, [0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 7, 8, 9])
    audit = audit_partition(0, source, replica, [6, 12])
    assert audit.problems == []
    assert audit.lost == 0
    assert audit.duplicates == [3, 2, 0]


def test_starts_crashed_before_saving_progress_are_each_charged_their_own_copies():
    source = _source(10)
    # Progress stays at 0 through two crashes: the second start re-writes 0..3,
    # the third 0..9. Each crash cost what its start wrote, not the union.
    replica = _replica(source, [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, *range(10)])
    audit = audit_partition(0, source, replica, [6, 10])
    assert audit.problems == []
    assert audit.duplicates == [6, 4, 0]


def test_going_back_without_a_restart_is_a_problem():
    source = _source(6)
    audit = audit_partition(0, source, _replica(source, [0, 1, 2, 1, 2, 3, 4, 5]), [])
    assert audit.problems == [
        "partition 0: replica offset 3 goes back to source offset 1 although the replicator "
        "was not restarted there"
    ]


def test_skipped_records_are_lost_and_reported_where_they_were_skipped():
    source = _source(8, start_offset=100)
    audit = audit_partition(3, source, _replica(source, [0, 1, 4, 5, 6, 7]), [])
    assert audit.lost == 2 and audit.first_lost == 102
    assert audit.problems == [
        "partition 3: replica offset 2 holds source offset 104, but source offsets 102..103 "
        "were skipped before it"
    ]


def test_a_missing_tail_is_lost():
    source = _source(5)
    audit = audit_partition(0, source, _replica(source, [0, 1, 2]), [])
    assert (audit.lost, audit.first_lost, audit.problems) == (2, 3, [])


def test_a_restart_may_not_skip_ahead_either():
    source = _source(6)
    audit = audit_partition(0, source, _replica(source, [0, 1, 3, 4, 5]), [2])
    assert audit.lost == 1
    assert "source offsets 2..2 were skipped" in audit.problems[0]


def test_a_changed_copy_and_a_foreign_record_are_problems():
    source = _source(3)
    replica = _replica(source, [0, 1, 2])
    replica.digests[1] = content_digest(b"k", b"1:", (("h", b"v"),), 1001)  # a header added
    replica.append(3, 99, 0)
    audit = audit_partition(0, source, replica, [])
    assert audit.problems == [
        "partition 0: replica offset 1 differs from its source record at offset 1 in key, "
        "value, headers or timestamp",
        "partition 0: replica offset 3 is no source record (sequence number 99)",
    ]


def test_problems_are_capped_with_a_count_of_the_rest():
    source = _source(30)
    audit = audit_partition(0, source, _replica(source, [0] * 30), [])
    assert len(audit.problems) == 11
    assert audit.problems[-1] == "partition 0: ... and 19 more problems"


def test_digest_covers_key_value_headers_and_timestamp():
    base = content_digest(b"k", b"v", [("h", b"1")], 5)
    assert base == content_digest(b"k", b"v", (("h", b"1"),), 5)
    assert base != content_digest(b"K", b"v", [("h", b"1")], 5)
    assert base != content_digest(b"k", b"w", [("h", b"1")], 5)
    assert base != content_digest(b"k", b"v", [("h", b"2")], 5)
    assert base != content_digest(b"k", b"v", [("h", b"1")], 6)
    assert base != content_digest(b"k", b"v", None, 5)


def test_sequence_numbers_lead_the_value():
    assert sequence_of(b"42:abc") == 42
    assert sequence_of(b"42") == 42
    assert sequence_of(b"x42:abc") == -1
    assert sequence_of(None) == -1
