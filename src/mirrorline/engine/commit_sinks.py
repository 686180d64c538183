"""What the batch committer (`engine.batch_commit`) writes through, as protocols.

The committer builds no client of its own: the flow hands it one collaborator
per write (offset syncs, translation runs, progress, the gap check and ledger,
the raw metrics), so that its ordering and failure rules are tested with plain
objects and run with the flow's real writers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from mirrorline.control.translation import Changes
from mirrorline.engine.batch_writer import PartitionResult
from mirrorline.engine.gaps import RecordGap
from mirrorline.engine.progress import SourcePartition
from mirrorline.formats import OffsetSync


class SyncSink(Protocol):
    def publish(self, syncs: Iterable[OffsetSync], timeout: float = ...) -> int: ...


class RunSink(Protocol):
    def persist(self, changes: Changes, timeout: float = ...) -> None: ...


class ProgressSink(Protocol):
    def save(self, progress: Mapping[SourcePartition, int], timeout: float = ...) -> None: ...


class GapSource(Protocol):
    def after_batch(
        self, expected: Mapping[SourcePartition, int], first_seen: Mapping[SourcePartition, int]
    ) -> list[RecordGap]: ...


class GapRecorder(Protocol):
    def record(self, gaps: Iterable[RecordGap]) -> None: ...


class BatchMetrics(Protocol):
    def batch_committed(self, batch_id: int, results: Sequence[PartitionResult]) -> None: ...


class CommitFailed(RuntimeError):
    """A commit could not be written; the message says what and where."""
