"""`group_offsets.for_each_group`: a bounded number of groups asked at once, answers
in the order given, and a failure not lost."""

from __future__ import annotations

import threading

import pytest

from mirrorline.group_offsets import OffsetAndMetadata, for_each_group, plan_moves


class _Asked:
    """Counts the questions running at once; each waits until `at_once` run together
    (or a deadline passes), so that the bound is reached whenever it can be."""

    def __init__(self, at_once: int) -> None:
        self._lock = threading.Lock()
        self._together = threading.Barrier(at_once)
        self.running = 0
        self.most = 0

    def __call__(self, group: str) -> str:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            self._together.wait(timeout=0.5)
        except threading.BrokenBarrierError:
            pass  # the last, smaller wave
        with self._lock:
            self.running -= 1
        return group.upper()


def test_answers_come_back_by_group_in_the_order_given():
    groups = [f"g{i:02d}" for i in reversed(range(40))]
    asked = _Asked(at_once=4)
    answers = for_each_group(groups, asked, at_once=4)
    assert list(answers) == groups
    assert answers == {g: g.upper() for g in groups}
    assert asked.most == 4


def test_no_more_than_at_once_groups_are_asked_together():
    asked = _Asked(at_once=3)
    for_each_group([f"g{i}" for i in range(10)], asked, at_once=3)
    assert asked.most == 3


def test_a_failing_group_raises_after_the_round():
    done: list[str] = []

    def ask(group: str) -> str:
        if group == "bad":
            raise RuntimeError("cannot read the committed offsets of consumer group bad")
        done.append(group)
        return group

    with pytest.raises(RuntimeError, match="consumer group bad"):
        for_each_group(["a", "bad", "c", "d"], ask, at_once=2)
    assert sorted(done) == ["a", "c", "d"]


def test_no_groups_and_one_group_need_no_threads():
    assert for_each_group([], lambda g: g) == {}
    assert for_each_group(["only"], lambda g: threading.current_thread().name) == {
        "only": threading.current_thread().name
    }


def test_plan_moves_keeps_the_never_backwards_rule():
    wanted = {("t", 0): OffsetAndMetadata(10), ("t", 1): OffsetAndMetadata(10)}
    plan = plan_moves({("t", 0): OffsetAndMetadata(20)}, wanted)
    assert plan.moves == {("t", 1): OffsetAndMetadata(10)}
    assert plan.held_back == {("t", 0): (20, 10)}
