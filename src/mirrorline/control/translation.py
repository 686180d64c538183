"""Exact offset translation: where a committed source offset lies on the target.

A flow's offset syncs (`engine.sync_points`) mark the first and last record of
every batch, both sides of every discontinuity and every `offset.lag.max`-th
record. Between two consecutive syncs (s_a, t_a) and (s_b, t_b) of a partition
nothing else was replicated, so the records there either advance together on
both sides, or there is exactly one jump. The store keeps syncs as **runs**:
stretches where source offset s_0 + i was written at target offset t_0 + i.
Consecutive syncs on one line extend a run; a jump starts a new one.

A group's committed offset U ("the next record to read") translates to the
target offset T such that the target records before T are exactly the
replicated source records before U:

- U inside a run: T = t_0 + (U - s_0).
- U past a run's last record but before the next run (the source records in
  between were compacted away, aborted or never held data): T is one past the
  run's last target record. Whatever sits on the target between there and the
  next run (transaction markers) holds no data.
- U past the last run: the same, provided the flow has read every source
  offset below U (`read_until`), since then nothing below U remains to be
  replicated. Otherwise U is not replicated yet, and nothing is guessed.
- U before the first run: too old, its syncs are no longer kept.

The same runs read the other way translate a target offset back to the source
(`inverse`), which is how a group that failed over returns (failback).

Replays: an at-least-once batch replayed after a crash writes its records
again, further on in the target. Its first sync then goes back in the source
numbering; the runs from there on described the superseded attempt and are cut.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

SourcePartition = tuple[str, int]  # (source topic, partition)


@dataclass(frozen=True)
class Run:
    """Source offsets `upstream + i` were written at `downstream + i`, for i < `records`."""

    upstream: int
    downstream: int
    records: int

    @property
    def upstream_end(self) -> int:
        """One past the run's last source offset."""
        return self.upstream + self.records

    @property
    def downstream_end(self) -> int:
        """One past the run's last target offset."""
        return self.downstream + self.records

    def maps(self, upstream: int, downstream: int) -> bool:
        """Whether the run already says `upstream` was written at `downstream`."""
        inside = self.upstream <= upstream < self.upstream_end
        return inside and self.downstream + (upstream - self.upstream) == downstream

    def in_line(self, upstream: int, downstream: int) -> bool:
        """Whether (upstream, downstream) continues the run's line past its end."""
        last = self.upstream_end - 1
        return upstream > last and upstream - last == downstream - (self.downstream_end - 1)


@dataclass(frozen=True)
class Translation:
    """A translated offset, or the reason there is none; `by_timestamp` when it is not
    exact (`control.timestamp_translation`)."""

    offset: int | None
    reason: str = ""
    by_timestamp: bool = False

    @property
    def ok(self) -> bool:
        return self.offset is not None


@dataclass
class Changes:
    """Runs written or removed since the last `drain_changes`, for persisting them."""

    upserts: dict[tuple[SourcePartition, int], Run]
    deletes: set[tuple[SourcePartition, int]]  # (partition, run's upstream start)

    def __bool__(self) -> bool:
        return bool(self.upserts or self.deletes)


class TranslationStore:
    """The runs of every partition of one flow; safe to use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[SourcePartition, list[Run]] = {}
        self._upserts: dict[tuple[SourcePartition, int], Run] = {}
        self._deletes: set[tuple[SourcePartition, int]] = set()

    # -- building ----------------------------------------------------------------------

    def load(self, runs: Iterable[tuple[SourcePartition, Run]]) -> None:
        """Start from persisted runs, in the order they were written (not marked as changes).

        A run written later replaces what earlier ones said from its start on,
        as a replay does: so a driver that kept writing after another took the
        flow over is outvoted by the newer one's runs.
        """
        with self._lock:
            for partition, run in runs:
                existing = self._runs.setdefault(partition, [])
                del existing[_first_at_or_after(existing, run.upstream) :]
                if existing and existing[-1].upstream_end > run.upstream:
                    last = existing[-1]
                    existing[-1] = Run(last.upstream, last.downstream, run.upstream - last.upstream)
                existing.append(run)

    def add_syncs(self, partition: SourcePartition, syncs: Iterable[tuple[int, int]]) -> None:
        """Add one partition's syncs, in the order they were published."""
        with self._lock:
            runs = self._runs.setdefault(partition, [])
            for upstream, downstream in syncs:
                self._add(partition, runs, upstream, downstream)

    def prune(self, log_starts: Mapping[SourcePartition, int]) -> int:
        """Forget runs no committed offset at or above the log start can need; the count.

        The run at or before the log start stays: offsets between its end and
        the next run still translate through it.
        """
        removed = 0
        with self._lock:
            for partition, start in log_starts.items():
                runs = self._runs.get(partition, [])
                keep_from = _last_at_or_before(runs, start)
                for run in runs[: max(keep_from, 0)]:
                    self._delete(partition, run)
                    removed += 1
                del runs[: max(keep_from, 0)]
        return removed

    def drain_changes(self) -> Changes:
        with self._lock:
            changes = Changes(self._upserts, self._deletes)
            self._upserts, self._deletes = {}, set()
            return changes

    # -- reading -----------------------------------------------------------------------

    def partitions(self) -> list[SourcePartition]:
        with self._lock:
            return sorted(p for p, runs in self._runs.items() if runs)

    def run_count(self) -> int:
        with self._lock:
            return sum(len(runs) for runs in self._runs.values())

    def runs(self, partition: SourcePartition) -> tuple[Run, ...]:
        with self._lock:
            return tuple(self._runs.get(partition, ()))

    def translate(
        self, partition: SourcePartition, upstream: int, read_until: int | None
    ) -> Translation:
        """The target offset for committed source offset `upstream`, or why there is none.

        `read_until` is the flow's next source offset for the partition: every
        offset below it has been read and, if it held a record, replicated.
        """
        if read_until is None or upstream > read_until:
            return Translation(
                None,
                f"not replicated yet (the flow has read up to offset {read_until})"
                if read_until is not None
                else "not replicated yet",
            )
        with self._lock:
            return _translate(self._runs.get(partition, []), upstream)

    def precedes_runs(self, partition: SourcePartition, upstream: int) -> bool:
        """Whether `upstream` lies before the partition's first run: data that was copied
        before the flow copied any (by MirrorMaker 2 or another tool), which the runs cannot
        translate. False without runs: nothing shows that the flow copied after it."""
        with self._lock:
            runs = self._runs.get(partition)
            return runs is not None and bool(runs) and upstream < runs[0].upstream

    def inverse(self, partition: SourcePartition, downstream: int) -> Translation:
        """The source offset for committed target offset `downstream` (failback).

        The source offset U such that the source records before U that were
        replicated are exactly the target records before `downstream`.
        """
        with self._lock:
            return _inverse(self._runs.get(partition, []), downstream)

    # -- internals ---------------------------------------------------------------------

    def _add(self, partition: SourcePartition, runs: list[Run], upstream: int, downstream: int):
        if runs and upstream < runs[-1].upstream_end:
            index = _last_at_or_before(runs, upstream)
            if index >= 0 and runs[index].maps(upstream, downstream):
                return  # published again (harmless): nothing new
            self._cut(partition, runs, upstream)
        if runs and runs[-1].in_line(upstream, downstream):
            last = runs[-1]
            runs[-1] = Run(last.upstream, last.downstream, upstream - last.upstream + 1)
            self._upsert(partition, runs[-1])
        else:
            runs.append(Run(upstream, downstream, 1))
            self._upsert(partition, runs[-1])

    def _cut(self, partition: SourcePartition, runs: list[Run], upstream: int) -> None:
        """Drop what the runs say from `upstream` on: a replay rewrites it."""
        while runs and runs[-1].upstream >= upstream:
            self._delete(partition, runs.pop())
        if runs and runs[-1].upstream_end > upstream:
            last = runs[-1]
            runs[-1] = Run(last.upstream, last.downstream, upstream - last.upstream)
            self._upsert(partition, runs[-1])

    def _upsert(self, partition: SourcePartition, run: Run) -> None:
        key = (partition, run.upstream)
        self._deletes.discard(key)
        self._upserts[key] = run

    def _delete(self, partition: SourcePartition, run: Run) -> None:
        key = (partition, run.upstream)
        self._upserts.pop(key, None)
        self._deletes.add(key)


def _last_at_or_before(runs: list[Run], upstream: int) -> int:
    """The index of the last run starting at or before `upstream`; -1 when none does."""
    return bisect.bisect_right(runs, upstream, key=lambda r: r.upstream) - 1


def _first_at_or_after(runs: list[Run], upstream: int) -> int:
    """The index of the first run starting at or after `upstream` (len(runs) when none does)."""
    return bisect.bisect_left(runs, upstream, key=lambda r: r.upstream)


def _translate(runs: list[Run], upstream: int) -> Translation:
    if not runs:
        return Translation(None, "no offset syncs for this partition yet")
    if upstream < runs[0].upstream:
        return Translation(
            None, f"older than the oldest kept offset sync (offset {runs[0].upstream})"
        )
    run = runs[_last_at_or_before(runs, upstream)]
    if upstream < run.upstream_end:
        return Translation(run.downstream + (upstream - run.upstream))
    return Translation(run.downstream_end)


def _inverse(runs: list[Run], downstream: int) -> Translation:
    if not runs:
        return Translation(None, "no offset syncs for this partition")
    if downstream < runs[0].downstream:
        return Translation(
            None, f"older than the oldest kept offset sync (offset {runs[0].downstream})"
        )
    index = bisect.bisect_right(runs, downstream, key=lambda r: r.downstream) - 1
    run = runs[index]
    if downstream < run.downstream_end:
        return Translation(run.upstream + (downstream - run.downstream))
    if downstream == run.downstream_end or index + 1 < len(runs):
        return Translation(run.upstream_end)
    # Past the last known record: markers or records whose syncs are still to come.
    return Translation(
        None, f"beyond the last offset sync (target offset {run.downstream_end - 1})"
    )
