"""AheadCommits: which earlier commit of a group a checkpoint may use."""

from __future__ import annotations

from mirrorline.control.ahead_commits import AheadCommits
from mirrorline.group_offsets import OffsetAndMetadata

KEY = ("g", "orders", 0)


def _noted(ahead: AheadCommits, *offsets: int) -> None:
    for offset in offsets:
        ahead.note(KEY, OffsetAndMetadata(offset, f"m{offset}"))


def test_the_newest_commit_progress_has_reached_is_taken_and_older_ones_forgotten():
    ahead = AheadCommits()
    _noted(ahead, 100, 200, 300)
    assert ahead.reached(KEY, 99) is None
    assert ahead.reached(KEY, 250) == OffsetAndMetadata(200, "m200")
    assert len(ahead) == 1
    assert ahead.reached(KEY, 250) is None  # 100 and 200 are gone
    assert ahead.reached(KEY, 300) == OffsetAndMetadata(300, "m300")


def test_a_reset_backwards_drops_the_commits_at_or_above_it():
    ahead = AheadCommits()
    _noted(ahead, 100, 200, 300, 150)
    assert ahead.reached(KEY, 1000) == OffsetAndMetadata(150, "m150")
    _noted(ahead, 400, 400)
    assert len(ahead) == 1


def test_beyond_the_limit_the_oldest_go_first():
    ahead = AheadCommits(limit=3)
    _noted(ahead, 1, 2, 3, 4, 5)
    assert ahead.reached(KEY, 2) is None
    assert ahead.reached(KEY, 4) == OffsetAndMetadata(4, "m4")


def test_forgotten_partitions_and_groups():
    ahead = AheadCommits()
    _noted(ahead, 10)
    ahead.note(("other", "orders", 0), OffsetAndMetadata(10))
    ahead.forget(KEY)
    assert ahead.reached(KEY, 10) is None
    ahead.keep_groups({"g"})
    assert len(ahead) == 0
