"""Which partitions `StallWatch` calls stalled, from (position, end) readings."""

from __future__ import annotations

from mirrorline.service.stall_watch import StallWatch


def test_a_partition_behind_its_end_that_does_not_move_stalls_after_the_time():
    watch: StallWatch[str] = StallWatch(after_s=20)
    assert watch.stalled(0, {"a": (5, 9)}) == []
    assert watch.stalled(19.9, {"a": (5, 12)}) == []  # the end moves; the position does not
    assert watch.stalled(20, {"a": (5, 12)}) == ["a"]
    assert watch.stalled(30, {"a": (5, 12)}) == ["a"]  # until something changes


def test_a_partition_that_moves_or_is_read_to_its_end_does_not_stall():
    watch: StallWatch[str] = StallWatch(after_s=20)
    watch.stalled(0, {"slow": (1, 100), "done": (7, 7)})
    assert watch.stalled(15, {"slow": (2, 100), "done": (7, 7)}) == []
    assert watch.stalled(34, {"slow": (2, 100), "done": (7, 7)}) == []  # 19 s at offset 2
    assert watch.stalled(35, {"slow": (2, 100), "done": (7, 7)}) == ["slow"]
    assert watch.stalled(100, {"done": (7, 7)}) == []


def test_reaching_the_end_restarts_the_clock():
    watch: StallWatch[str] = StallWatch(after_s=20)
    watch.stalled(0, {"a": (5, 9)})
    watch.stalled(10, {"a": (5, 5)})  # an end that moved back: nothing to read
    assert watch.stalled(25, {"a": (5, 6)}) == []
    assert watch.stalled(45, {"a": (5, 6)}) == ["a"]


def test_reset_forgets_every_reading():
    watch: StallWatch[str] = StallWatch(after_s=20)
    watch.stalled(0, {"a": (5, 9), "b": (1, 2)})
    watch.reset()
    assert watch.stalled(25, {"a": (5, 9)}) == []  # seen again only from 25
    assert watch.stalled(44, {"a": (5, 9)}) == []
    assert watch.stalled(64, {"a": (5, 9)}) == ["a"]
