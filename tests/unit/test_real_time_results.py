"""Real-time mode hands the committer what the tasks' cumulative reports add, in batch order."""

from __future__ import annotations

import json
from collections.abc import Sequence

from mirrorline.engine.batch_writer import PartitionResult
from mirrorline.engine.real_time import RealTimeResults


class _Reports:
    """What the JVM sink's `takeResults` would give: the rows queued since the last call."""

    def __init__(self) -> None:
        self.queued: list[dict] = []
        self.closed = False

    def task(
        self,
        batch: int,
        task: int,
        offsets: Sequence[int] = (),
        *,
        first_seen: int | None = None,
        seq: int = 1,
        final: bool = True,
        attempt: int = 0,
        filtered: int = 0,
        failed: str | None = None,
    ) -> None:
        """A report of the task: it settled `offsets` (written at offset + 100) since
        `first_seen` (the first of them by default)."""
        logs = []
        if offsets or first_seen is not None:
            first = offsets[0] if offsets else None
            last = offsets[-1] if offsets else None
            start = first_seen if first_seen is not None else first
            assert start is not None
            logs.append(
                {
                    "topic": "orders",
                    "partition": task,
                    "records": len(offsets),
                    "filtered": filtered,
                    "skipped": 0,
                    "dropped": 0,
                    "routed": 0,
                    "refused": 0,
                    "dead_lettered": 0,
                    "refusals": [],
                    "first_seen": start,
                    "next_offset": (last if last is not None else start - 1) + 1 + filtered,
                    "bytes": 10 * len(offsets),
                    "first_offset": first,
                    "last_offset": last,
                    "first_target_offset": None if first is None else first + 100,
                    "last_target_offset": None if last is None else last + 100,
                    "min_timestamp": 1,
                    "max_age_ms": 5,
                    "latency_count": len(offsets),
                    "latency_sum_ms": 5 * len(offsets),
                    "latency_min_ms": 5,
                    "latency_max_ms": 5,
                    "runs": [[first, first + 100, len(offsets)]] if offsets else [],
                }
            )
        row = {
            "batch": batch,
            "task": task,
            "attempt": attempt,
            "seq": seq,
            "final": final,
            "logs": logs,
        }
        if failed is not None:
            row["failed"] = failed
        self.queued.append(row)

    def takeResults(self) -> str:  # noqa: N802 - the JVM method's name
        rows, self.queued = self.queued, []
        return json.dumps(rows)

    def close(self) -> None:
        self.closed = True


def _collector(reports: _Reports, tasks: int, accept: bool = True):
    submitted: list[tuple[int, list[PartitionResult]]] = []

    def submit(batch: int, results: Sequence[PartitionResult], started: float) -> bool:
        submitted.append((batch, list(results)))
        return accept

    return RealTimeResults(reports, "a->b", tasks, 10, submit), submitted


def test_a_later_batch_waits_until_every_task_of_the_one_before_has_ended() -> None:
    reports = _Reports()
    results, submitted = _collector(reports, tasks=2)
    reports.task(0, 0, [0, 1, 2])
    results.collect()
    assert [batch for batch, _ in submitted] == [0]  # what is settled goes at once

    reports.task(1, 0, [3])
    reports.task(1, 1, [7])
    results.collect()
    assert [batch for batch, _ in submitted] == [0]  # task 1 of batch 0 has not ended

    reports.task(0, 1, first_seen=7)  # a task that read nothing still reports
    results.collect()
    assert [batch for batch, _ in submitted] == [0, 1]
    first = submitted[0][1]
    assert [(r.partition, r.first_offset, r.last_offset) for r in first] == [(0, 0, 2)]
    assert first[0].syncs == ((0, 100), (2, 102))
    assert [(r.partition, r.next_offset) for r in submitted[1][1]] == [(0, 4), (1, 8)]


def test_each_report_hands_over_only_what_the_one_before_did_not() -> None:
    reports = _Reports()
    results, submitted = _collector(reports, tasks=1)
    reports.task(0, 0, [10, 11], seq=1, final=False)
    results.collect()
    reports.task(0, 0, [10, 11, 12, 13], seq=2, final=False, filtered=2)
    reports.task(0, 0, [10, 11], seq=1, final=False)  # a late heartbeat: older
    results.collect()
    reports.task(0, 0, [10, 11, 12, 13], seq=3, final=True, filtered=2)  # nothing new
    reports.task(1, 0, [16], seq=1, final=False)
    results.collect()
    handed = [
        (b, r.first_seen, r.next_offset, r.records, r.filtered, r.first_offset)
        for b, rs in submitted
        for r in rs
    ]
    assert handed == [(0, 10, 12, 2, 0, 10), (0, 12, 16, 2, 2, 12), (1, 16, 17, 1, 0, 16)]
    assert submitted[1][1][0].syncs[0] == (12, 112)
    assert submitted[1][1][0].bytes == 20


def test_a_retried_task_counts_from_where_the_failed_attempt_had_reached() -> None:
    reports = _Reports()
    results, submitted = _collector(reports, tasks=1)
    reports.task(0, 0, [0, 1, 2], seq=4, final=False)
    results.collect()
    reports.task(0, 0, [0, 1], seq=1, final=False, attempt=1)  # behind: nothing new
    results.collect()
    reports.task(0, 0, [0, 1, 2, 3, 4], seq=2, final=True, attempt=1)
    results.collect()
    assert [
        (r.first_seen, r.next_offset, r.records, r.first_offset) for _, rs in submitted for r in rs
    ] == [(0, 3, 3, 0), (3, 5, 2, 3)]


def test_nothing_more_is_submitted_once_the_committer_refuses() -> None:
    reports = _Reports()
    results, submitted = _collector(reports, tasks=1, accept=False)
    reports.task(0, 0, [0])
    reports.task(1, 0, [1])
    results.collect()
    assert [batch for batch, _ in submitted] == [0]
    reports.task(2, 0, [2])
    results.collect()  # a batch 2 without batch 1 would leave a hole in the progress
    assert [batch for batch, _ in submitted] == [0]


def test_a_task_that_reports_its_failure_fails_the_query_and_keeps_what_it_settled() -> None:
    reports = _Reports()
    results, submitted = _collector(reports, tasks=2)
    reports.task(0, 0, [0, 1], seq=1, final=False)
    results.collect()
    assert results.failure() is None
    reports.task(0, 1, [], seq=1, final=False, failed="the copy of orders[1] offset 7 failed")
    reports.task(0, 0, [0, 1, 2], seq=2, final=False)
    results.collect()
    assert results.failure() == "the copy of orders[1] offset 7 failed"
    assert [(r.partition, r.next_offset) for _, rs in submitted for r in rs] == [(0, 2), (0, 3)]


def test_stopping_closes_the_sink() -> None:
    reports = _Reports()
    results, _ = _collector(reports, tasks=1)
    results.start()
    results.stop(5)
    assert reports.closed
