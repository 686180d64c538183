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
  on purpose to prevent a loop) or MirrorMaker 2 copied it before the flow
  took over (its offset syncs became the flow's first runs where they were in
  line, so its records are compared where that alignment is clean; the others
  have no exact mapping and are counted as not covered, and the target
  records between those syncs are MM2's copy of them, not extra);
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
value, headers)` compared with `==` (bytes compared as bytes, no digest
needed); `skipped` marks a source record the flow did not copy on purpose.
Batches arrive as lists from the readers. While both sides agree along a run,
a tight loop walks the two batches side by side; every other case takes the
general step above, one record at a time.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence

from mirrorline.control.translation import Run
from mirrorline.verification.report import PartitionReport

Headers = tuple[tuple[str, bytes | None], ...] | None
Content = tuple[int, bytes | None, bytes | None, Headers]
Record = tuple[int, Content, bool]

FIELDS = ("timestamp", "key", "value", "headers")
RECENT = 256  # source records looked back on to name a later duplicate
PENDING = 100_000  # source records an unclaimed extra waits for its original to come
SLACK = 1000  # target records read past the span, for copies an extra record pushed on


class _Cursor:
    """A peekable read of batches of records that keeps the last `RECENT` ones read."""

    def __init__(self, batches: Iterable[Sequence[Record]]) -> None:
        self._batches: Iterator[Sequence[Record]] = iter(batches)
        self.buf: list[Record] = []
        self.i = 0

    def peek(self, ahead: int = 0) -> Record | None:
        while self.i + ahead >= len(self.buf):
            batch = next(self._batches, None)
            if batch is None:
                return None
            keep = max(0, self.i - RECENT)
            self.buf = self.buf[keep:] + list(batch)
            self.i -= keep
        return self.buf[self.i + ahead]

    def pop(self) -> None:
        self.i += 1

    def recent(self) -> list[Record]:
        """The records read before the current one, newest last (at most `RECENT`)."""
        return self.buf[max(0, self.i - RECENT) : self.i]


class _SourceMap:
    """The run holding each source offset, for offsets asked in increasing order."""

    def __init__(self, runs: Sequence[Run]) -> None:
        self._runs = runs
        self._index = 0

    def run_of(self, offset: int) -> Run | None:
        runs, index = self._runs, self._index
        while index < len(runs) and runs[index].upstream_end <= offset:
            index += 1
        self._index = index
        if index < len(runs) and runs[index].upstream <= offset:
            return runs[index]
        return None

    def expected(self, offset: int) -> int | None:
        """The target offset the runs say source `offset` was written at, or None."""
        run = self.run_of(offset)
        return None if run is None else run.downstream + (offset - run.upstream)


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
    """Names extra target records duplicates when they equal a source record near them:
    one read shortly before, or one that comes within `PENDING` source records."""

    def __init__(self, report: PartitionReport) -> None:
        self._report = report
        self.waiting: dict[Content, list[int]] = {}
        self._since = 0  # source records checked when the oldest waiting extra came

    def seen(self, offset: int, content: Content) -> None:
        """A source record went by: the extras equal to it are its duplicates."""
        claimed = self.waiting.pop(content, None)
        for target in claimed or ():
            self._report.extra.add({"target_offset": target, "duplicate_of": offset})
        if self.waiting and self._report.checked - self._since > PENDING:
            self.flush()

    def add(self, offset: int, content: Content, recent: Sequence[Record]) -> None:
        """A target record that is no copy of the source record at its place."""
        for s_off, s_content, _ in reversed(recent):
            if s_content == content:
                self._report.extra.add({"target_offset": offset, "duplicate_of": s_off})
                return
        if not self.waiting:
            self._since = self._report.checked
        self.waiting.setdefault(content, []).append(offset)

    def flush(self) -> None:
        """Report the extras no source record claimed."""
        for offsets in self.waiting.values():
            for target in offsets:
                self._report.extra.add({"target_offset": target, "duplicate_of": None})
        self.waiting.clear()


def compare_partition(
    report: PartitionReport,
    runs: Sequence[Run],
    source: Iterable[Sequence[Record]],
    target: Iterable[Sequence[Record]],
    target_end: int,
    predecessor_end: int = 0,
) -> PartitionReport:
    """Compare `source` (records of [report.start, report.end)) with `target` (records
    from the start of `target_span` of that range) through `runs`; the findings go to
    `report`. `target_end` ends the span: target records from there on are only used
    as the shifted copies of records before it (`SLACK`), never reported. Source
    records below `predecessor_end` were copied by MirrorMaker 2: where its offset
    syncs were not in line the runs have no exact mapping, and such a record counts as
    not covered instead of missing."""
    src, tgt = _Cursor(source), _Cursor(target)
    smap, tmap = _SourceMap(runs), _TargetMap(runs)
    extras = _Extras(report)
    # MM2's copy ends on the target where the flow's own first run after it starts.
    predecessor_target_end = 0
    if predecessor_end:
        after = [r.downstream for r in runs if r.upstream >= predecessor_end]
        predecessor_target_end = after[0] if after else target_end
    while True:
        if not extras.waiting and tmap.shift == 0 and _agreeing(report, smap, src, tgt):
            continue
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
                if t_rec[0] >= predecessor_target_end:  # else part of MM2's unaligned copy
                    extras.add(t_rec[0], t_rec[1], src.recent())
                tgt.pop()
                continue
        if s_rec is None or (key is not None and key < s_rec[0]):
            report.source_removed += 1
            tgt.pop()
            continue
        expected = smap.expected(s_rec[0])
        if expected is None:
            _unmapped(report, s_rec, predecessor_end)
        elif t_rec is None or key is None or s_rec[0] < key:
            report.checked += 1
            report.missing.add({"source_offset": s_rec[0], "target_offset": expected})
        elif s_rec[1] == t_rec[1]:
            report.checked += 1
            if t_rec[0] != expected:
                report.misplaced.add(
                    {"source_offset": s_rec[0], "target_offset": expected, "found_at": t_rec[0]}
                )
            tgt.pop()
        else:
            report.checked += 1
            _mismatch(report, tmap, src, tgt, extras, s_rec, t_rec, expected)
        if extras.waiting:
            extras.seen(s_rec[0], s_rec[1])
        src.pop()
    extras.flush()
    return report


def _agreeing(report: PartitionReport, smap: _SourceMap, src: _Cursor, tgt: _Cursor) -> bool:
    """Walk both buffers while each source record's copy is where its run says; whether
    any record was checked so."""
    sb, si, tb, ti = src.buf, src.i, tgt.buf, tgt.i
    ns, nt = len(sb), len(tb)
    if si >= ns or ti >= nt:
        return False
    run = smap.run_of(sb[si][0])
    if run is None:
        return False
    end, delta = run.upstream_end, run.downstream - run.upstream
    first = si
    while si < ns and ti < nt:
        s_off, content, _ = sb[si]
        t_off, t_content, _ = tb[ti]
        if s_off >= end or t_off != s_off + delta or content != t_content:
            break
        si += 1
        ti += 1
    report.checked += si - first
    src.i, tgt.i = si, ti
    return si > first


def _unmapped(report: PartitionReport, record: Record, predecessor_end: int) -> None:
    if record[2]:
        report.skipped_by_flow += 1
    elif record[0] < predecessor_end:
        report.not_covered += 1
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
        extras.add(t_rec[0], t_rec[1], src.recent())
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
