"""Turns: which contender of a steady workload carries the load, and when.

A steady run has a warm-up and then measured windows of AGE_WINDOW_S. One contender
alone (the default) has them back to back from the moment its load starts, and
the contenders run one after the other.

Interleaved (`--interleave`), every contender runs at the same time, each with its
own topic, load producer and target consumer, and they take turns with the load:
the first contender's warm-up, the second's, ..., then the first one's first
window, the second one's, and so on. A contender whose turn it is gets the
workload's rate; the others get the start-up trickle (PROBE_RATE), so they stay
warm and their probes' groups keep moving. On a shared machine whose
speed moves by the minute, contender A's window i and contender B's window i are
then a minute apart instead of a whole run, and only one contender's load is on
the brokers at a time, as in a run of its own. The price: each contender's stream
pauses between its turns, so the workload is no longer steady (a replicator slow to
pick up again pays at the start of every turn); every contender also runs beside
the others' idle replicators; and a checkpoint age sampled early in a
turn may come from the trickle before it (a replicator that checkpoints only as
its offset syncs move checkpoints seldom at PROBE_RATE).

The runs of one measurement meet at a barrier before they start, once each has
copied its first record (the schedule is laid out then, from one clock), and at
the end of the last turn, so that no replicator stops while another still measures.
A run that fails breaks the barrier, and the others stop waiting for it.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from dataclasses import dataclass

from benchlib.common import BenchmarkError

# The record-age figures are also given per window of this length (the last may be shorter).
AGE_WINDOW_S = 60


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Slot:
    """A stretch of wall-clock time, in epoch milliseconds: [start_ms, end_ms)."""

    start_ms: int
    end_ms: int

    def holds(self, ms: float) -> bool:
        return self.start_ms <= ms < self.end_ms


def window_of(windows: list[Slot], ms: float) -> int | None:
    """The index of the window of `windows` (in time order) that holds `ms`, if any: a
    lookup per record read, so a bisection, not a scan."""
    i = bisect.bisect_right(windows, ms, key=lambda slot: slot.start_ms) - 1
    return i if i >= 0 and windows[i].holds(ms) else None


class BrokenOff(BenchmarkError):
    """Another run of the same measurement failed: this one stopped waiting for it."""


class Turns:
    """The schedule the runs of one steady measurement share (see the module)."""

    def __init__(self, runs: int, warmup_s: float, measured_s: float, timeout: float) -> None:
        self.runs = runs
        self._warmup_ms = int(warmup_s * 1000)
        self._measured_ms = int(measured_s * 1000)
        self._timeout = timeout
        self._barrier = threading.Barrier(runs)
        self._lay_out = threading.Barrier(runs, action=self._set_schedule)
        self._schedule: list[list[Slot]] = [[] for _ in range(runs)]

    @property
    def window_count(self) -> int:
        return math.ceil(self._measured_ms / (AGE_WINDOW_S * 1000))

    def _window_lengths(self) -> list[int]:
        full = AGE_WINDOW_S * 1000
        return [min(full, self._measured_ms - i * full) for i in range(self.window_count)]

    def _set_schedule(self) -> None:
        at = now_ms()
        for length in [self._warmup_ms, *self._window_lengths()]:
            for run in range(self.runs):
                self._schedule[run].append(Slot(at, at + length))
                at += length

    def _wait(self, barrier: threading.Barrier, what: str) -> None:
        try:
            barrier.wait(self._timeout)
        except threading.BrokenBarrierError:
            raise BrokenOff(
                f"a contender measured alongside failed, or {what} took over {self._timeout:g}s"
            ) from None

    def meet(self, what: str) -> None:
        """Wait until every run has reached `what`."""
        self._wait(self._barrier, what)

    def start_load(self) -> None:
        """Wait until every run has copied its first record; the schedule starts now."""
        self._wait(self._lay_out, "the first copied record")

    def turns(self, run: int) -> list[Slot]:
        """Run `run`'s turns with the load: its warm-up, then its measured windows."""
        return self._schedule[run]

    def windows(self, run: int) -> list[Slot]:
        return self._schedule[run][1:]

    def measured(self) -> list[tuple[int, Slot]]:
        """Every run's measured windows in time order, each with its run's index."""
        return sorted(
            ((run, slot) for run in range(self.runs) for slot in self.windows(run)),
            key=lambda owned: owned[1].start_ms,
        )

    def break_off(self) -> None:
        self._barrier.abort()
        self._lay_out.abort()


def flat(slots: list[Slot]) -> list[float]:
    """`slots` as [start s, end s, ...] in epoch seconds, for a child process's array."""
    return [edge / 1000 for slot in slots for edge in (slot.start_ms, slot.end_ms)]
