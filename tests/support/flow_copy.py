"""A flow's bookkeeping for a copy made by hand: its runs and progress, written by the
product's own writers (`TranslationStore` -> `RunLog`, `ProgressStore`) as a flow's batch
committer writes them, so that `mirrorline verify` reads what a flow would have left."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mirrorline.control.offset_runs import RunLog, read_runs
from mirrorline.control.translation import Run, TranslationStore
from mirrorline.engine.progress import ProgressStore
from mirrorline.kafka import ClusterClients
from support.wait import wait_until

SourcePartition = tuple[str, int]


def record_copy(
    target: ClusterClients,
    flow: str,
    runs: Mapping[SourcePartition, Sequence[Run]],
    progress: Mapping[SourcePartition, int],
) -> None:
    """Persist `runs` (as the syncs at each run's first and last record) and `progress`."""
    store = TranslationStore()
    for partition, partition_runs in runs.items():
        syncs: list[tuple[int, int]] = []
        for run in partition_runs:
            syncs += [
                (run.upstream, run.downstream),
                (run.upstream_end - 1, run.downstream_end - 1),
            ]
        store.add_syncs(partition, syncs)
    run_log = RunLog(flow, target, replication_factor=1)
    try:
        run_log.ensure_topic()
        run_log.persist(store.drain_changes())
    finally:
        run_log.close()
    saved = ProgressStore(flow, target, replication_factor=1)
    try:
        saved.ensure_topic()
        saved.save(progress)
        # A reader's metadata may not know a topic created just now: wait until it reads them.
        wait_until(
            lambda: all(saved.load(missing_ok=True).get(p) == o for p, o in progress.items()),
            timeout=30,
            what=f"flow {flow}'s progress to be readable",
        )
    finally:
        saved.close()
    wanted = {(p, run.upstream) for p, partition_runs in runs.items() for run in partition_runs}
    wait_until(
        lambda: (
            wanted
            <= {
                (p, run.upstream)
                for p, run in read_runs(target.consumer_settings, flow, missing_ok=True)
            }
        ),
        timeout=30,
        what=f"flow {flow}'s runs to be readable",
    )
