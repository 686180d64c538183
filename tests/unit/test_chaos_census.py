"""The chaos census: a copy may hold a record as often as its source does, no more."""

from support.chaos_streams import ReplicaWatcher


def watcher_holding(copies_by_seq: list[int]) -> ReplicaWatcher:
    watcher = ReplicaWatcher({}, "topic", 1, "read_committed")
    watcher._copies = bytearray(copies_by_seq)
    watcher.copies = sum(copies_by_seq)
    watcher.distinct = sum(1 for c in copies_by_seq if c)
    return watcher


def test_copies_beyond_the_source_count_and_the_source_duplicates_are_reported():
    copy = watcher_holding([1, 2, 3, 1, 0])
    source = watcher_holding([1, 2, 1, 1, 1])

    census = copy.census(5, source)

    assert (census.lost, census.duplicated, census.source_duplicated) == (1, 2, 1)


def test_without_a_source_every_copy_beyond_the_first_is_a_duplicate():
    census = watcher_holding([1, 2, 3, 1, 0]).census(5)

    assert (census.copies, census.lost, census.duplicated) == (7, 1, 3)


def test_a_record_the_source_never_held_counts_once_copied():
    copy = watcher_holding([1, 2])
    source = watcher_holding([1])

    assert copy.census(2, source).duplicated == 1
