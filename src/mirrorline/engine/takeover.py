"""Taking a flow over: what a driver does before its first batch as the flow's leader.

In this order, because each step relies on the one before:

1. the flow's internal topics exist (progress, offset syncs, raw metrics, the
   dead-letter topic when one is set), their writers created with them (see
   `internal_topic.InternalTopic.ensure`);
2. the progress is fenced, then read: after the fence no earlier driver can
   move it, so what is read is what this driver continues from;
3. the committer starts from that progress and from the offset runs (a
   bounded read of the runs topic), which make up the translation store;
4. the syncs of the offset mapping saved with exactly-once progress are
   published again, in case their batch's driver died before it could (doing
   it twice is harmless).

Partitions without progress (a new flow, topic or partition) continue from
the MirrorMaker 2 that copied them before, if one did (`follow_predecessor`,
asked before `start.position`): its mapping of what MM2 copied goes into the
runs first, then the starts into the progress, so that a crash in between
leaves partitions that are taken over again. While MM2 still runs the flow,
this fails before anything is copied.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import Protocol

from mirrorline.control.offset_runs import RunLog
from mirrorline.control.translation import TranslationStore
from mirrorline.engine.batch_commit import BatchCommitter
from mirrorline.engine.bookkeeping import Commit
from mirrorline.engine.progress import ProgressStore, SourcePartition
from mirrorline.engine.sync_points import sync_points_of_runs
from mirrorline.flow_context import FlowContext
from mirrorline.kafka import ensure_topic
from mirrorline.predecessor.handover import plan_handover

log = logging.getLogger(__name__)


class OwnTopic(Protocol):
    def ensure_topic(self) -> None: ...


def take_over(
    context: FlowContext,
    *,
    progress: ProgressStore,
    runs: RunLog,
    committer: BatchCommitter,
    own_topics: Iterable[OwnTopic | None],
    term: int | None,
) -> int:
    """Take the flow over (see the module); returns how long loading the runs took, in ms."""
    settings = context.settings
    progress.ensure_topic()
    progress.fence()  # before reading: no older driver moves it after
    for part in own_topics:
        if part is not None:
            part.ensure_topic()
    if settings.dead_letter_topic:
        ensure_topic(
            context.target.admin,
            settings.dead_letter_topic,
            partitions=1,
            replication_factor=settings.dead_letter_replication_factor,
        )
    saved = progress.load_state()
    started = time.monotonic()
    runs.ensure_topic()
    store = TranslationStore()
    store.load(runs.load())
    committer.reset(saved.next_offsets, store)
    republished = tuple(
        (tp, tuple(sync_points_of_runs(r, settings.offset_lag_max)))
        for tp, r in saved.last_runs.items()
    )
    committer.commit_now(Commit(syncs=republished), term)
    took_ms = int((time.monotonic() - started) * 1000)
    log.info(
        "flow %s: translation store loaded %d runs in %d ms",
        context.name,
        store.run_count(),
        took_ms,
    )
    return took_ms


def follow_predecessor(
    context: FlowContext,
    partitions: Sequence[SourcePartition],
    *,
    runs: RunLog,
    committer: BatchCommitter,
    term: int | None,
) -> dict[SourcePartition, int]:
    """Where `partitions` (without progress) continue after MirrorMaker 2's copy, saved;
    the partitions MM2 never committed are left out."""
    handover = plan_handover(context, partitions)
    if handover is None:
        return {}
    store = committer.translation
    for part in handover.partitions:
        store.add_syncs(part.partition, part.syncs)
        if part.note:
            log.warning("flow %s: %s", context.name, part.note)
    runs.persist(store.drain_changes())
    starts = handover.starts()
    committer.start_at(starts, term)
    log.info("flow %s %s", context.name, handover.describe())
    return starts
