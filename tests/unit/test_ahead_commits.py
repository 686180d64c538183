"""AheadCommits: which earlier commit of a group a checkpoint may use."""

from __future__ import annotations

from mirrorline.control.ahead_commits import AheadCommits, Noted
from mirrorline.group_offsets import OffsetAndMetadata

KEY = ("g", "orders", 0)


def _noted(ahead: AheadCommits, *offsets: int) -> None:
    for offset in offsets:
        ahead.note(KEY, OffsetAndMetadata(offset, f"m{offset}"), read_at=float(offset))


def _commit(offset: int) -> Noted:
    """The commit `_noted` noted at `offset`, with the time it was read."""
    return Noted(OffsetAndMetadata(offset, f"m{offset}"), float(offset))


def test_the_newest_commit_progress_has_reached_is_taken_and_older_ones_forgotten():
    ahead = AheadCommits()
    _noted(ahead, 100, 200, 300)
    assert ahead.reached(KEY, 99) is None
    assert ahead.reached(KEY, 250) == _commit(200)
    assert len(ahead) == 1
    assert ahead.reached(KEY, 250) is None  # 100 and 200 are gone
    assert ahead.reached(KEY, 300) == _commit(300)


def test_a_reset_backwards_drops_the_commits_at_or_above_it():
    ahead = AheadCommits()
    _noted(ahead, 100, 200, 300, 150)
    assert ahead.reached(KEY, 1000) == _commit(150)
    _noted(ahead, 400, 400)
    assert len(ahead) == 1


def test_beyond_the_limit_the_oldest_go_first():
    ahead = AheadCommits(limit=3)
    _noted(ahead, 1, 2, 3, 4, 5)
    assert ahead.reached(KEY, 2) is None
    assert ahead.reached(KEY, 4) == _commit(4)


def test_forgotten_partitions_and_groups():
    ahead = AheadCommits()
    _noted(ahead, 10)
    ahead.note(("other", "orders", 0), OffsetAndMetadata(10), read_at=0.0)
    ahead.forget(KEY)
    assert ahead.reached(KEY, 10) is None
    ahead.keep_groups({"g"})
    assert len(ahead) == 0


def test_the_partitions_with_noted_commits_are_listed_until_progress_takes_them():
    ahead = AheadCommits()
    _noted(ahead, 10, 20)
    ahead.note(("other", "orders", 1), OffsetAndMetadata(5), read_at=0.0)
    assert sorted(ahead.keys()) == [KEY, ("other", "orders", 1)]
    assert ahead.reached(KEY, 25) == _commit(20)
    assert ahead.keys() == [("other", "orders", 1)]
