"""The driver's bookkeeping after each batch, written in order while the next batch runs.

Once the executors have written a batch, the driver owes the target (and the
offset-syncs cluster) four writes, in this order:

1. the batch's offset syncs are published;
2. the translation store takes them, and its changed runs are persisted;
3. the flow's progress is saved (not in exactly-once mode: there each task
   saved its partition's progress with its records);
4. the source gaps the batch found are recorded, and its refusals logged;
   the batch is handed to the flow's raw metrics (`engine.flow_metrics`),
   so that only committed batches are counted.

Runs come before progress because a replay cuts what is ahead of it: runs
ahead of the progress are rewritten by the replay, but progress ahead of the
runs would leave records no offset translates to. Gaps come after progress,
so that a replayed batch does not report them twice.

These writes take a few round trips to the clusters. The batch function does
not wait for them: `submit_batch` does what must be in the batch's order in
memory (the batch's new offsets, gap detection against the offsets the
previous batch ended at) and queues the rest for the committer's thread,
which writes one batch at a time in batch order. So Spark plans and the
executors write batch N+1 while the driver saves batch N. The queue is short
(`BACKLOG`): when it is full the next batch function waits before it hands
over its results, which bounds both memory and what a crash replays (batch N
and batch N+1, `REPLAYED_BATCHES`).

Two views of the flow's next offsets follow from that:

- `next_offsets()`: what the batches so far have read, committed or not. Gap
  detection compares a batch's first offsets with it, and the query starts
  from it.
- `committed_offsets()`: what is saved. Checkpoints translate only below it:
  the translation store holds the syncs of everything below, nothing ahead of
  it is promised.

Every other driver-side write of these topics goes through the same thread, so
that each topic has one writer and one order: the gap check's progress moves
(`skip`), pruned runs (`prune`), start positions and the syncs a restarted
flow republishes (`commit_now`).

Failure and loss of leadership. A failed write fails the committer: what is
queued is dropped, `next_offsets()` falls back to the committed offsets, and
`failure()` says why; the flow fails on its next tick, and starts again from
the progress saved in the target (`reset`). Each queued commit carries the
term of leadership it was made in, checked before each of its writes: a
driver that no longer leads writes nothing more (a write under way when the
term ends cannot be called back; the progress topic's fencing stops that one).
Stopping the flow waits for the queue to drain (`drain`) or deliberately
drops it (`abandon`); either way nothing of the old queue is written after.
Each commit also carries the generation it was made in; `abandon` and `reset`
start a new one, so a batch that outlived its query cannot queue anything.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from mirrorline.control.translation import TranslationStore
from mirrorline.engine.batch_writer import PartitionResult
from mirrorline.engine.bookkeeping import Commit, Totals, batch_commit, first_offsets
from mirrorline.engine.commit_sinks import (
    BatchMetrics,
    CommitFailed,
    GapRecorder,
    GapSource,
    ProgressSink,
    RunSink,
    SyncSink,
)
from mirrorline.engine.gaps import RecordGap
from mirrorline.engine.progress import SourcePartition
from mirrorline.engine.startup import FIRST_BATCH, StartupTimeline
from mirrorline.engine.status import summarise
from mirrorline.formats import OffsetSync

log = logging.getLogger(__name__)

# Batches whose bookkeeping is not written yet while the next batch is written, at most.
BACKLOG = 1
# What a crash can replay: those batches and the one in flight.
REPLAYED_BATCHES = BACKLOG + 1


class _Dropped(Exception):
    """The commit belongs to an ended generation or term: nothing more of it is written."""


@dataclass
class _Entry:
    commit: Commit
    generation: int
    term: int | None
    written: bool = False  # set, under the lock, once every write of it succeeded
    done: threading.Event = field(default_factory=threading.Event)  # written or dropped


class BatchCommitter:
    """Writes a flow's bookkeeping on a thread of its own, in order (see the module)."""

    def __init__(
        self,
        flow: str,
        *,
        progress: ProgressSink,
        runs: RunSink,
        syncs: SyncSink | None,
        gaps: GapSource,
        ledger: GapRecorder,
        term: Callable[[], int | None],
        metrics: BatchMetrics | None = None,
        startup: StartupTimeline | None = None,
        on_saved: Callable[[], None] | None = None,
        backlog: int = BACKLOG,
    ) -> None:
        """`syncs` None: the flow emits no offset syncs. `term`: the driver's current
        term of leadership of the flow (None: it does not lead). `metrics` is told of
        every batch once it is written, `on_saved` of every saved progress (neither
        may block)."""
        self.flow = flow
        self._progress, self._runs, self._syncs = progress, runs, syncs
        self._gaps, self._ledger, self._term = gaps, ledger, term
        self._metrics = metrics
        self._on_saved = on_saved
        self._backlog = backlog
        self._changed = threading.Condition()
        self._queue: deque[_Entry] = deque()
        self._busy = False  # an entry is being written
        self._generation = 0
        self._failure: str | None = None
        self._read: dict[SourcePartition, int] = {}
        self._committed: dict[SourcePartition, int] = {}
        self._totals = Totals()
        self._startup = startup
        self._translation = TranslationStore()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"commits {flow}", daemon=True)
        self._thread.start()

    # -- views -------------------------------------------------------------------------

    @property
    def translation(self) -> TranslationStore:
        with self._changed:
            return self._translation

    def next_offsets(self) -> dict[SourcePartition, int]:
        with self._changed:
            return dict(self._read)

    def committed_offsets(self) -> dict[SourcePartition, int]:
        with self._changed:
            return dict(self._committed)

    def totals(self) -> Totals:
        with self._changed:
            return self._totals

    def failure(self) -> str | None:
        """Why the committer failed, until `reset`; None while it works."""
        with self._changed:
            return self._failure

    def generation(self) -> int:
        with self._changed:
            return self._generation

    # -- what the flow asks ------------------------------------------------------------

    def reset(self, next_offsets: Mapping[SourcePartition, int], store: TranslationStore) -> None:
        """Start over from saved progress and a loaded store: a new generation, no failure."""
        with self._changed:
            self._new_generation()
            self._failure = None
            self._read = dict(next_offsets)
            self._committed = dict(next_offsets)
            self._translation = store

    def start_at(self, positions: Mapping[SourcePartition, int], term: int | None) -> None:
        """Partitions without progress start at `positions`; offsets are saved before the
        call returns, symbolic positions (negative: Spark's earliest) are not saved."""
        with self._changed:
            for tp, offset in positions.items():
                if offset < 0:
                    self._read[tp] = self._committed[tp] = offset
        saved = {tp: offset for tp, offset in positions.items() if offset >= 0}
        if saved:
            self.commit_now(Commit(progress=saved), term)

    def submit_batch(
        self,
        batch_id: int,
        results: Sequence[PartitionResult],
        *,
        exactly_once: bool,
        started: float,
        generation: int,
        term: int | None,
    ) -> bool:
        """Queue a written batch's bookkeeping; waits while the backlog is full.

        Gap detection happens here, against the offsets the previous batch ended
        at. False when the batch will not be committed (a failure, or a stop
        since `generation`): it is replayed from the saved progress. Calls must
        not overlap each other nor `skip` (the data path's batch lock).
        """
        if not results:
            return True
        with self._changed:
            if generation != self._generation or self._failure is not None:
                return False
            expected = dict(self._read)
        gaps = self._gaps.after_batch(expected, first_offsets(results))
        commit = batch_commit(
            batch_id, results, gaps=gaps, exactly_once=exactly_once, started=started
        )
        return self._enqueue(_Entry(commit, generation, term), wait=True) is not None

    def skip(
        self,
        moved: Mapping[SourcePartition, int],
        gaps: Sequence[RecordGap],
        term: int | None,
        timeout: float,
    ) -> bool:
        """Move partitions past records deleted before they were read; False when the
        backlog is full (the check comes again). The progress is saved in every mode."""
        commit = Commit(progress=dict(moved), gaps=tuple(gaps), timeout=timeout)
        return self._enqueue(_Entry(commit, self.generation(), term), wait=False) is not None

    def prune(
        self, log_starts: Mapping[SourcePartition, int], term: int | None, timeout: float
    ) -> bool:
        """Forget runs no offset at or above `log_starts` needs; False when the backlog is full."""
        commit = Commit(prune=dict(log_starts), timeout=timeout)
        return self._enqueue(_Entry(commit, self.generation(), term), wait=False) is not None

    def commit_now(self, commit: Commit, term: int | None) -> None:
        """Queue `commit` and wait until it is written; `CommitFailed` if it is not."""
        entry = self._enqueue(_Entry(commit, self.generation(), term), wait=True)
        if entry is None or not entry.done.wait() or not self._written(entry):
            raise CommitFailed(
                f"flow {self.flow}: {self.failure() or 'the bookkeeping was stopped'}"
            )

    def drain(self, timeout: float) -> bool:
        """Wait until everything queued is written (or dropped); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def abandon(self) -> int:
        """Drop what is queued and start a new generation; the number of commits dropped."""
        with self._changed:
            dropped = len(self._queue) + self._busy
            self._new_generation()
            return dropped

    def close(self, timeout: float = 5.0) -> None:
        """Drop what is queued and end the thread (a write under way ends by its timeout)."""
        with self._changed:
            self._closed = True
            self._new_generation()
        self._thread.join(timeout)

    # -- the thread --------------------------------------------------------------------

    def _enqueue(self, entry: _Entry, *, wait: bool) -> _Entry | None:
        with self._changed:
            while self._valid(entry) and len(self._queue) + self._busy >= self._backlog:
                if not wait:
                    return None
                self._changed.wait()
            if not self._valid(entry):
                return None
            self._queue.append(entry)
            self._read.update(entry.commit.progress)
            self._changed.notify_all()
            return entry

    def _valid(self, entry: _Entry) -> bool:
        return entry.generation == self._generation and self._failure is None and not self._closed

    def _written(self, entry: _Entry) -> bool:
        with self._changed:
            return entry.written

    def _new_generation(self) -> None:
        """Called with the lock held: drop the queue; later writes of the old one stop."""
        for entry in self._queue:
            entry.done.set()
        self._queue.clear()
        self._generation += 1
        self._read = dict(self._committed)
        self._changed.notify_all()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._queue and not self._closed:
                    self._changed.wait()
                if self._closed:
                    return
                entry = self._queue.popleft()
                self._busy = True
                store = self._translation
            try:
                self._apply(entry, store)
            except _Dropped:
                pass
            except Exception as exc:  # noqa: BLE001 - the flow fails on its next tick
                self._fail(entry, exc)
            finally:
                with self._changed:
                    self._busy = False
                    entry.done.set()
                    self._changed.notify_all()

    def _apply(self, entry: _Entry, store: TranslationStore) -> None:
        commit = entry.commit
        if commit.syncs and self._syncs is not None:
            self._check(entry)
            self._syncs.publish(
                (OffsetSync(t, p, u, d) for (t, p), syncs in commit.syncs for u, d in syncs),
                timeout=commit.timeout,
            )
        for partition, syncs in commit.syncs:
            store.add_syncs(partition, syncs)
        if commit.prune:
            store.prune(commit.prune)
        changes = store.drain_changes()
        if changes:
            self._check(entry)
            self._runs.persist(changes, timeout=commit.timeout)
        if commit.progress and commit.save_progress:
            self._check(entry)
            self._progress.save(commit.progress, timeout=commit.timeout)
        current = self._term()
        with self._changed:
            self._check_current(entry, current)
            self._committed.update(commit.progress)
            if commit.batch is not None:
                self._totals = self._totals.add(commit.batch)
            entry.written = True
        if commit.progress and self._on_saved is not None:
            self._on_saved()
        self._ledger.record(commit.gaps)
        if self._startup is not None and commit.batch is not None and commit.batch.stats.records:
            self._startup.reached(FIRST_BATCH)
        if commit.batch is not None:
            for text in commit.batch.refusals:
                log.warning("flow %s skipped a refused record: %s", self.flow, text)
            if self._metrics is not None:
                self._metrics.batch_committed(commit.batch.stats.batch_id, commit.batch.results)

    def _check(self, entry: _Entry) -> None:
        """Raise `_Dropped` unless the entry's generation and term are still current."""
        current = self._term()
        with self._changed:
            self._check_current(entry, current)

    def _check_current(self, entry: _Entry, term: int | None) -> None:
        """`_check` with the lock held and the current term known."""
        if entry.generation != self._generation:
            raise _Dropped
        if entry.term != term:
            log.warning(
                "flow %s: leadership ended; %d commits not written (the next leader "
                "replays their batches)",
                self.flow,
                len(self._queue) + 1,
            )
            self._new_generation()
            raise _Dropped

    def _fail(self, entry: _Entry, exc: Exception) -> None:
        reason = summarise(str(exc)) or type(exc).__name__
        with self._changed:
            if entry.generation != self._generation:
                return  # a stopped generation's write failed: nobody waits for it
            self._failure = reason
            self._new_generation()
        log.warning("flow %s: bookkeeping failed: %s", self.flow, reason)
