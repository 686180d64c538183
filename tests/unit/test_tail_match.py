"""Where a predecessor's copy ends: the shortest prefix of the source that ends the target."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorline.predecessor.mm2_state import _source_partition
from mirrorline.predecessor.tail_match import TailMatch, match_tail


def test_records_written_after_the_commit_are_found():
    # The target ends with the committed record (c) and two written after it.
    assert match_tail("xyzcde", "cdefgh") == TailMatch(3)


def test_only_the_committed_record_on_the_target():
    assert match_tail("xyzc", "cdef") == TailMatch(1)


def test_no_committed_record_at_the_tail_is_no_match():
    assert match_tail("xyz", "cdef") is None
    assert match_tail("", "c") is None
    assert match_tail("c", "") is None


def test_repeated_records_take_the_earliest_end_and_report_the_others():
    found = match_tail("qaaaa", "aaaaaab")
    assert found == TailMatch(1, (2, 3, 4))
    assert found.ambiguous


def test_the_whole_source_copied():
    assert match_tail("xcde", "cde") == TailMatch(3)


@given(
    st.lists(st.integers(0, 3), max_size=12),
    st.lists(st.integers(0, 3), min_size=1, max_size=12),
    st.integers(0, 12),
)
def test_agrees_with_checking_every_length(before, source, copied):
    copied = min(copied, len(source))
    target = before + source[:copied]
    lengths = [
        n for n in range(1, len(source) + 1) if n <= len(target) and target[-n:] == source[:n]
    ]
    found = match_tail(target, source)
    if not lengths:
        assert found is None
    else:
        assert found == TailMatch(lengths[0], tuple(lengths[1:]))


def test_mm2_source_offset_keys():
    key = b'["MirrorSourceConnector",{"cluster":"east","partition":2,"topic":"orders"}]'
    assert _source_partition(key, "east") == ("orders", 2)
    assert _source_partition(key, "west") is None
    heartbeat = (
        b'["MirrorHeartbeatConnector",{"sourceClusterAlias":"east","targetClusterAlias":"w"}]'
    )
    assert _source_partition(heartbeat, "east") is None
    assert _source_partition(b"not json", "east") is None
    assert _source_partition(None, "east") is None
