"""The streaming comparison of one source partition with its copy, through the flow's runs.

A run says that source offsets `u + i` were written at target offsets
`d + i` (`control.translation.Run`). Runs are ordered the same way on both
sides, so the source records of the checked range and the target records of
the range the runs map them to can be merged in one pass, each side read in
order and never held whole:

- a target record at an offset no run covers is **extra** (a replayed batch's
  superseded copy, another writer's record); it is named a duplicate when it
  equals a source record near it (one already compared, or one still to come
  within `PENDING` records);
- a source record at an offset no run covers is **missing**, unless it
  carries a provenance header naming the target cluster (the flow skipped it
  on purpose to prevent a loop);
- a source record whose mapped target offset holds no record is **missing**;
- a target record mapped to a source offset that holds no record any more
  (compaction, retention since the copy) is counted as `source_removed`;
- where both exist they must be equal: timestamp, key, value and the user's
  headers (the readers leave Mirrorline's provenance headers out). When they
  are not, one record of look-ahead tells a lost record from a changed one:
  if the target record equals the next source record, the current source
  record is **missing** and the copy is shifted; if the next target record
  equals the current source record, the target record is **extra**; else
  the record is **different**, naming the fields. After such a shift, copies
  found at another offset than the runs say are **misplaced** (offset
  translation through the runs would be off for them); the shift ends with
  the run.

Records are `(offset, content, skipped)`: `content` is `(timestamp, key,
value, headers)` compared with `==`; `skipped` marks a source record the flow
did not copy on purpose. Batches arrive as lists from the readers.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Iterator, Sequence

from mirrorline.control.translation import Run
from mirrorline.verification.report import PartitionReport

Headers = tuple[tuple[str, bytes | None], ...] | None
Content = tuple[int, bytes | None, bytes | None, Headers]
Record = tuple[int, Content, bool]

FIELDS = ("timestamp", "key", "value", "headers")
RECENT = 256  # source records remembered to name a later duplicate
PENDING = 100_000  # unmatched extras kept to name a duplicate of a source record still to come
SLACK = 1000  # target records read past the span, for copies an extra record pushed on


class _Cursor:
    """A peekable read of batches of records."""

    def __init__(self, batches: Iterable[Sequence[Record]]) -> None:
        self._batches: Iterator[Sequence[Record]] = iter(batches)
        self._buf: list[Record] = []
        self._i = 0

    def peek(self, ahead: int = 0) -> Record | None:
        while self._i + ahead >= len(self._buf):
            batch = next(self._batches, None)
            if batch is None:
                return None
            self._buf = self._buf[self._i :] + list(batch)
            self._i = 0
        return self._buf[self._i + ahead]

    def pop(self) -> None:
        self._i += 1


class _TargetMap:
    """Which source offset a target offset holds a copy of, under the current shift."""

    def __init__(self, runs: Sequence[Run]) -> None:
        self._runs = runs
        self._starts = [r.downstream for r in runs]
        self._index = -1
        self.shift = 0  # within the current run: target record for source offset u + shift

    def source_of(self, offset: int) -> int | None:
        index = bisect.bisect_right(self._starts, offset) - 1
        if index < 0:
            return None
        end = self._runs[index].downstream_end
        if index == self._index and self.shift > 0:
            end += self.shift  # an extra record inside the run pushed its copies on
        if offset >= end:
            return None
        if index != self._index:
            self._index, self.shift = index, 0
        run = self._runs[index]
        return run.upstream + (offset - run.downstream) - self.shift


def mapped(runs: Sequence[Run], offset: int) -> int | None:
    """The target offset the runs say source `offset` was written at, or None."""
    index = bisect.bisect_right(runs, offset, key=lambda r: r.upstream) - 1
    if index < 0 or offset >= runs[index].upstream_end:
        return None
    run = runs[index]
    return run.downstream + (offset - run.upstream)


def target_span(runs: Sequence[Run], start: int, end: int) -> tuple[int, int] | None:
    """The target offsets the runs map source offsets [start, end) into, or None."""
    inside = [r for r in runs if r.upstream < end and r.upstream_end > start]
    if not inside:
        return None
    first, last = inside[0], inside[-1]
    low = first.downstream + max(0, start - first.upstream)
    high = last.downstream + (min(end, last.upstream_end) - last.upstream)
    return low, high


def differing_fields(a: Content, b: Content) -> list[str]:
    return [name for name, x, y in zip(FIELDS, a, b, strict=True) if x != y]


class _Extras:
    """Names extra target records duplicates when they equal a source record near them."""

    def __init__(self, report: PartitionReport) -> None:
        self._report = report
        self._recent: dict[Content, int] = {}
        self._order: deque[tuple[Content, int]] = deque()
        self._pending: dict[Content, list[int]] = {}
        self._pending_count = 0

    def seen(self, offset: int, content: Content) -> None:
        """A source record went by."""
        if self._pending:
            waiting = self._pending.pop(content, None)
            if waiting is not None:
                self._pending_count -= len(waiting)
                for target in waiting:
                    self._report.extra.add({"target_offset": target, "duplicate_of": offset})
        self._recent[content] = offset
        self._order.append((content, offset))
        if len(self._order) > RECENT:
            old, old_offset = self._order.popleft()
            if self._recent.get(old) == old_offset:
                del self._recent[old]

    def add(self, offset: int, content: Content) -> None:
        """A target record that is no copy of the source record at its place."""
        earlier = self._recent.get(content)
        if earlier is not None:
            self._report.extra.add({"target_offset": offset, "duplicate_of": earlier})
            return
        self._pending.setdefault(content, []).append(offset)
        self._pending_count += 1
        if self._pending_count > PENDING:
            self.flush(keep=PENDING // 2)

    def flush(self, keep: int = 0) -> None:
        """Report the extras no source record claimed, all but the `keep` newest."""
        while self._pending and self._pending_count > keep:
            content = next(iter(self._pending))
            for target in self._pending.pop(content):
                self._report.extra.add({"target_offset": target, "duplicate_of": None})
                self._pending_count -= 1


def compare_partition(
    report: PartitionReport,
    runs: Sequence[Run],
    source: Iterable[Sequence[Record]],
    target: Iterable[Sequence[Record]],
    target_end: int,
) -> PartitionReport:
    """Compare `source` (records of [report.start, report.end)) with `target` (records
    from the start of `target_span` of that range) through `runs`; the findings go to
    `report`. `target_end` ends the span: target records from there on are only used
    as the shifted copies of records before it (`SLACK`), never reported."""
    src, tgt = _Cursor(source), _Cursor(target)
    tmap = _TargetMap(runs)
    extras = _Extras(report)
    while True:
        s_rec, t_rec = src.peek(), tgt.peek()
        if s_rec is None and t_rec is None:
            break
        key = None
        if t_rec is not None:
            key = tmap.source_of(t_rec[0])
            if t_rec[0] >= target_end and (key is None or s_rec is None):
                tgt.pop()  # past the range: read only for a shifted copy
                continue
            if key is None:
                extras.add(t_rec[0], t_rec[1])
                tgt.pop()
                continue
        if s_rec is not None:
            expected = mapped(runs, s_rec[0])
            if expected is None:
                _unmapped(report, s_rec)
                extras.seen(s_rec[0], s_rec[1])
                src.pop()
                continue
        if s_rec is None or (key is not None and key < s_rec[0]):
            report.source_removed += 1
            tgt.pop()
            continue
        report.checked += 1
        if t_rec is None or key is None or s_rec[0] < key:
            report.missing.add({"source_offset": s_rec[0], "target_offset": expected})
        elif s_rec[1] == t_rec[1]:
            if t_rec[0] != expected:
                report.misplaced.add(
                    {
                        "source_offset": s_rec[0],
                        "target_offset": expected,
                        "found_at": t_rec[0],
                    }
                )
            tgt.pop()
        else:
            _mismatch(report, tmap, src, tgt, extras, s_rec, t_rec, expected)
        extras.seen(s_rec[0], s_rec[1])
        src.pop()
    extras.flush()
    return report


def _unmapped(report: PartitionReport, record: Record) -> None:
    if record[2]:
        report.skipped_by_flow += 1
    else:
        report.checked += 1
        report.missing.add({"source_offset": record[0], "target_offset": None})


def _mismatch(
    report: PartitionReport,
    tmap: _TargetMap,
    src: _Cursor,
    tgt: _Cursor,
    extras: _Extras,
    s_rec: Record,
    t_rec: Record,
    expected: int | None,
) -> None:
    """The target record where the copy of `s_rec` should be differs from it."""
    s_next, t_next = src.peek(1), tgt.peek(1)
    if s_next is not None and s_next[1] == t_rec[1]:
        # The copy of s_rec is not there: t_rec is the next source record's copy.
        report.missing.add({"source_offset": s_rec[0], "target_offset": expected})
        tmap.shift -= s_next[0] - s_rec[0]
        return  # t_rec stays, now the copy of s_next
    if t_next is not None and t_next[1] == s_rec[1]:
        # t_rec is a record the runs do not account for; s_rec's copy follows it.
        extras.add(t_rec[0], t_rec[1])
        tgt.pop()
        tmap.shift += 1
        report.misplaced.add(
            {"source_offset": s_rec[0], "target_offset": expected, "found_at": t_next[0]}
        )
        tgt.pop()
        return
    report.different.add(
        {
            "source_offset": s_rec[0],
            "target_offset": t_rec[0],
            "fields": differing_fields(s_rec[1], t_rec[1]),
        }
    )
    tgt.pop()
