"""Real-time mode hands the committer whole batches, in order, once every task reported."""

from __future__ import annotations

import json
from collections.abc import Sequence

from mirrorline.engine.batch_writer import PartitionResult
from mirrorline.engine.real_time import RealTimeResults


class _Reports:
    """What the JVM sink's `takeResults` would give: the rows queued since the last call."""

    def __init__(self) -> None:
        self.queued: list[dict] = []

    def task(self, batch: int, task: int, offsets: Sequence[int] = ()) -> None:
        logs = []
        if offsets:
            first, last = offsets[0], offsets[-1]
            logs.append(
                {
                    "topic": "orders",
                    "partition": task,
                    "records": len(offsets),
                    "filtered": 0,
                    "skipped": 0,
                    "refused": 0,
                    "dead_lettered": 0,
                    "refusals": [],
                    "first_seen": first,
                    "next_offset": last + 1,
                    "bytes": 10 * len(offsets),
                    "first_offset": first,
                    "last_offset": last,
                    "first_target_offset": first + 100,
                    "last_target_offset": last + 100,
                    "min_timestamp": 1,
                    "max_age_ms": 5,
                    "latency_count": len(offsets),
                    "latency_sum_ms": 5 * len(offsets),
                    "latency_min_ms": 5,
                    "latency_max_ms": 5,
                    "runs": [[first, first + 100, len(offsets)]],
                }
            )
        self.queued.append({"batch": batch, "task": task, "logs": logs})

    def takeResults(self) -> str:  # noqa: N802 - the JVM method's name
        rows, self.queued = self.queued, []
        return json.dumps(rows)


def _collector(reports: _Reports, tasks: int, accept: bool = True):
    submitted: list[tuple[int, list[PartitionResult]]] = []

    def submit(batch: int, results: Sequence[PartitionResult], started: float) -> bool:
        submitted.append((batch, list(results)))
        return accept

    return RealTimeResults(reports, "a->b", tasks, 10, submit), submitted


def test_a_batch_waits_for_every_task_and_batches_go_in_order() -> None:
    reports = _Reports()
    results, submitted = _collector(reports, tasks=2)
    reports.task(0, 0, [0, 1, 2])
    results.collect()
    assert submitted == []  # task 1 of batch 0 has not reported

    reports.task(1, 0, [3])
    reports.task(1, 1, [7])
    results.collect()
    assert submitted == []  # batch 1 is complete, but batch 0 is not

    reports.task(0, 1)  # a task that read nothing still reports
    results.collect()
    assert [batch for batch, _ in submitted] == [0, 1]
    first = submitted[0][1]
    assert [(r.partition, r.first_offset, r.last_offset) for r in first] == [(0, 0, 2)]
    assert first[0].syncs == ((0, 100), (2, 102))
    assert [(r.partition, r.next_offset) for r in submitted[1][1]] == [(0, 4), (1, 8)]


def test_a_task_reported_twice_counts_once() -> None:
    reports = _Reports()
    results, submitted = _collector(reports, tasks=2)
    reports.task(0, 0, [0])
    reports.task(0, 0, [0])
    results.collect()
    assert submitted == []


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
