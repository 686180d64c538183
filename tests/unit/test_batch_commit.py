"""The batch committer's protocol: write order, the bounded backlog, failures, stops.

The sinks are stand-ins that record every write in one list, so the tests see
the order across the offset-syncs, runs and progress topics; the translation
store and the bookkeeping are the real ones.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

import pytest

from mirrorline.control.translation import Changes
from mirrorline.engine.batch_commit import BACKLOG, BatchCommitter, CommitFailed
from mirrorline.engine.batch_writer import PartitionResult
from mirrorline.engine.bookkeeping import Commit, advanced_offsets, batch_commit, first_offsets
from mirrorline.engine.gaps import RecordGap
from mirrorline.formats import OffsetSync

P = ("orders", 0)
WAIT_S = 10.0


def result(first: int, end: int, *, partition: int = 0, **extra) -> PartitionResult:
    """What one task reports for source offsets [first, end) of orders[partition]."""
    fields = dict(
        topic="orders",
        partition=partition,
        records=end - first,
        filtered=0,
        skipped=0,
        refused=0,
        dead_lettered=0,
        refusals=(),
        first_seen=first,
        next_offset=end,
        bytes=10 * (end - first),
        first_offset=first,
        last_offset=end - 1,
        first_target_offset=first,
        last_target_offset=end - 1,
        min_timestamp=0,
        max_age_ms=5,
        syncs=((first, first), (end - 1, end - 1)),
    )
    fields.update(extra)
    return PartitionResult(**fields)


class Cluster:
    """Every write of the committer, in order; a write can be held or made to fail."""

    def __init__(self) -> None:
        self.writes: list[tuple] = []
        self.expected: list[dict] = []  # what gap detection was asked to compare with
        self.hold = {"syncs": threading.Event(), "runs": threading.Event(), "progress": None}
        self.hold["syncs"].set()
        self.hold["runs"].set()
        self.entered = threading.Event()
        self.fail: dict[str, Exception] = {}
        self.term: int | None = 1

    def _write(self, kind: str, what) -> None:
        self.entered.set()
        gate = self.hold.get(kind)
        if gate is not None:
            assert gate.wait(WAIT_S)
        if kind in self.fail:
            raise self.fail[kind]
        self.writes.append((kind, what))

    # the sinks
    def publish(self, syncs: Iterable[OffsetSync], timeout: float = 60.0) -> int:
        listed = [(s.upstream_offset, s.downstream_offset) for s in syncs]
        self._write("syncs", listed)
        return len(listed)

    def persist(self, changes: Changes, timeout: float = 60.0) -> None:
        self._write("runs", sorted(start for (_, start) in changes.upserts))

    def save(self, progress: Mapping, timeout: float = 60.0) -> None:
        self._write("progress", dict(progress))

    def record(self, gaps: Iterable[RecordGap]) -> None:
        for gap in gaps:
            self.writes.append(("gap", (gap.start, gap.end)))

    def after_batch(self, expected: Mapping, first_seen: Mapping) -> list[RecordGap]:
        self.expected.append(dict(expected))
        return [
            RecordGap(t, p, expected[(t, p)], seen)
            for (t, p), seen in first_seen.items()
            if expected.get((t, p), -1) >= 0 and seen > expected[(t, p)]
        ]

    def committer(self, **kwargs) -> BatchCommitter:
        committer = BatchCommitter(
            "east->west",
            progress=self,
            runs=self,
            syncs=self,
            gaps=self,
            ledger=self,
            term=lambda: self.term,
            **kwargs,
        )
        committer.reset({P: 0}, committer.translation)
        return committer


def submit(committer: BatchCommitter, batch_id: int, *results: PartitionResult, **kw) -> bool:
    return committer.submit_batch(
        batch_id,
        results,
        exactly_once=kw.get("exactly_once", False),
        started=0.0,
        generation=kw.get("generation", committer.generation()),
        term=kw.get("term", 1),
    )


@pytest.fixture
def cluster():
    return Cluster()


def test_each_batch_publishes_syncs_then_runs_then_progress_then_gaps_in_batch_order(cluster):
    committer = cluster.committer()
    try:
        assert submit(committer, 1, result(0, 100))
        # Source offsets 100..149 were deleted meanwhile: the target goes on at 100.
        assert submit(committer, 2, result(150, 200, syncs=((150, 100), (199, 149))))
        assert committer.drain(WAIT_S)
        assert cluster.writes == [
            ("syncs", [(0, 0), (99, 99)]),
            ("runs", [0]),
            ("progress", {P: 100}),
            ("syncs", [(150, 100), (199, 149)]),
            ("runs", [150]),
            ("progress", {P: 200}),
            ("gap", (100, 150)),
        ]
        assert committer.committed_offsets() == committer.next_offsets() == {P: 200}
        totals = committer.totals()
        assert (totals.records, totals.batches, totals.last_batch.batch_id) == (150, 2, 2)
    finally:
        committer.close()


def test_gap_detection_compares_with_the_previous_batch_even_before_it_is_committed(cluster):
    cluster.hold["progress"] = threading.Event()
    committer = cluster.committer(backlog=2)
    try:
        assert submit(committer, 1, result(0, 100))
        assert cluster.entered.wait(WAIT_S)
        assert submit(committer, 2, result(100, 180))
        assert cluster.expected == [{P: 0}, {P: 100}]
        # Read, not committed: checkpoints must not translate past what is saved.
        assert committer.next_offsets() == {P: 180}
        assert committer.committed_offsets() == {P: 0}
        cluster.hold["progress"].set()
        assert committer.drain(WAIT_S)
        assert committer.committed_offsets() == {P: 180}
    finally:
        cluster.hold["progress"].set()
        committer.close()


def test_the_next_batch_hands_over_its_results_once_the_previous_one_is_saved(cluster):
    cluster.hold["progress"] = threading.Event()
    committer = cluster.committer()  # the default backlog
    returned = threading.Event()
    try:
        assert BACKLOG == 1
        assert submit(committer, 1, result(0, 10))  # being written
        second = threading.Thread(
            target=lambda: submit(committer, 2, result(10, 20)) and returned.set()
        )
        second.start()
        assert not returned.wait(0.3), "batch 2 must wait for batch 1 to be saved"
        cluster.hold["progress"].set()
        assert returned.wait(WAIT_S)
        assert committer.drain(WAIT_S)
        saved = [what for kind, what in cluster.writes if kind == "progress"]
        assert saved == [{P: 10}, {P: 20}]
        # Flow-thread work never waits: it comes again later.
        cluster.hold["progress"] = threading.Event()
        assert submit(committer, 3, result(20, 30))
        assert not committer.skip({P: 60}, [], 1, timeout=1.0)
        assert not committer.prune({P: 0}, 1, timeout=1.0)
    finally:
        cluster.hold["progress"].set()
        committer.close()


def test_exactly_once_batches_publish_syncs_and_runs_but_leave_progress_to_the_tasks(cluster):
    committer = cluster.committer()
    try:
        assert submit(committer, 1, result(0, 50), exactly_once=True)
        assert committer.drain(WAIT_S)
        assert [kind for kind, _ in cluster.writes] == ["syncs", "runs"]
        assert committer.committed_offsets() == {P: 50}
    finally:
        committer.close()


def test_a_failed_write_stops_what_follows_and_is_reported_until_reset(cluster):
    cluster.hold["progress"] = threading.Event()
    cluster.fail["progress"] = RuntimeError(
        "mirrorline.kafka.KafkaOperationError: flow east->west: progress not written to "
        "mirrorline.progress.internal: Broker: Not enough in-sync replicas"
    )
    committer = cluster.committer(backlog=2)
    try:
        assert submit(committer, 1, result(0, 10))
        assert submit(committer, 2, result(10, 20))
        cluster.hold["progress"].set()
        assert committer.drain(WAIT_S)
        assert committer.failure() == (
            "flow east->west: progress not written to mirrorline.progress.internal: "
            "Broker: Not enough in-sync replicas"
        )
        # Batch 2 was never written; the view falls back to what is saved.
        assert [kind for kind, _ in cluster.writes] == ["syncs", "runs"]
        assert committer.next_offsets() == {P: 0}
        assert not submit(committer, 3, result(20, 30))
        with pytest.raises(CommitFailed, match="Not enough in-sync replicas"):
            committer.commit_now(Commit(progress={P: 5}), 1)

        del cluster.fail["progress"]
        committer.reset({P: 0}, committer.translation)
        assert committer.failure() is None
        assert submit(committer, 1, result(0, 10))
        assert committer.drain(WAIT_S)
        assert cluster.writes[-1] == ("progress", {P: 10})
    finally:
        committer.close()


def test_a_driver_that_lost_the_flow_writes_nothing_more(cluster):
    cluster.hold["syncs"] = threading.Event()
    committer = cluster.committer(backlog=2)
    try:
        assert submit(committer, 1, result(0, 10))
        assert submit(committer, 2, result(10, 20))
        assert cluster.entered.wait(WAIT_S)  # batch 1's syncs are being published
        cluster.term = None
        cluster.hold["syncs"].set()
        assert committer.drain(WAIT_S)
        assert [kind for kind, _ in cluster.writes] == ["syncs"]
        assert committer.committed_offsets() == committer.next_offsets() == {P: 0}
        assert committer.failure() is None  # not a failure: the next leader replays
    finally:
        committer.close()


def test_abandoning_drops_the_queue_and_the_rest_of_the_write_under_way(cluster):
    cluster.hold["runs"] = threading.Event()
    committer = cluster.committer(backlog=2)
    try:
        generation = committer.generation()
        assert submit(committer, 1, result(0, 10))
        assert submit(committer, 2, result(10, 20))
        assert not committer.drain(0.1)
        assert committer.abandon() == 2
        cluster.hold["runs"].set()
        assert committer.drain(WAIT_S)
        assert [kind for kind, _ in cluster.writes] == ["syncs", "runs"]
        assert committer.next_offsets() == {P: 0}
        # A batch of the stopped query that ends late queues nothing.
        assert not submit(committer, 3, result(20, 30), generation=generation)
        # The next query's batches go on from the saved progress.
        assert submit(committer, 1, result(0, 10))
        assert committer.drain(WAIT_S)
        assert cluster.writes[-1] == ("progress", {P: 10})
    finally:
        committer.close()


def test_start_positions_and_skipped_gaps_are_saved_in_order_with_the_batches(cluster):
    committer = cluster.committer()
    try:
        committer.reset({}, committer.translation)
        committer.start_at({P: 40, ("orders", 1): -2}, 1)
        assert cluster.writes == [("progress", {P: 40})]  # saved before it returns
        assert committer.next_offsets() == {P: 40, ("orders", 1): -2}
        gap = RecordGap("orders", 0, 40, 70)
        assert committer.skip({P: 70}, [gap], 1, timeout=1.0)
        assert committer.next_offsets()[P] == 70
        assert submit(committer, 1, result(70, 80))
        assert committer.drain(WAIT_S)
        assert [w for w in cluster.writes if w[0] in ("progress", "gap")] == [
            ("progress", {P: 40}),
            ("progress", {P: 70}),
            ("gap", (40, 70)),
            ("progress", {P: 80}),
        ]
        assert cluster.expected[-1] == {P: 70, ("orders", 1): -2}
    finally:
        committer.close()


def test_totals_count_committed_batches_and_keep_the_latest_refusals(cluster):
    committer = cluster.committer()
    try:
        for n in range(4):
            refusals = tuple(f"refused {n}.{i}" for i in range(2))
            start = 10 * n
            assert submit(
                committer,
                n,
                result(
                    start,
                    start + 10,
                    refused=2,
                    dead_lettered=1,
                    refusals=refusals,
                    dropped=3,
                    routed=1,
                ),
            )
        assert committer.drain(WAIT_S)
        totals = committer.totals()
        assert totals.counters() == {
            "records_replicated": 40,
            "bytes_replicated": 400,
            "records_refused": 8,
            "records_dead_lettered": 4,
            "records_already_committed": 0,
            "records_dropped_by_transforms": 12,
            "records_routed_by_transforms": 4,
        }
        assert totals.refusals == (
            "refused 1.1",
            "refused 2.0",
            "refused 2.1",
            "refused 3.0",
            "refused 3.1",
        )
    finally:
        committer.close()


def test_a_batch_read_by_several_tasks_advances_to_its_furthest_offset():
    results = [result(0, 50), result(50, 120), result(10, 30, partition=1)]
    assert advanced_offsets(results) == {P: 120, ("orders", 1): 30}
    assert first_offsets(results) == {P: 0, ("orders", 1): 10}
    commit = batch_commit(7, results, gaps=(), exactly_once=False, started=0.0)
    assert commit.progress == {P: 120, ("orders", 1): 30}
    assert [partition for partition, _ in commit.syncs] == [P, P, ("orders", 1)]
    assert commit.batch is not None
    assert (commit.batch.stats.records, commit.batch.stats.partitions) == (140, 2)
