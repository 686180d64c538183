"""Exact offset translation over runs built from offset syncs."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorline.control.translation import Run, TranslationStore
from support.offset_mapping import sync_points

P = ("t", 0)


def replicate(seed: int, *, replays: bool, lag_max: int = 7):
    """A random replication: source records with gaps, target markers, batches, replays.

    Returns (store, target log as [(target offset, source offset)], read_until).
    """
    rng = random.Random(seed)
    offset, source = rng.randrange(0, 5), []
    for _ in range(rng.randrange(1, 120)):
        source.append(offset)
        offset += 1 if rng.random() < 0.8 else rng.randrange(2, 6)  # compaction, aborts
    read_until = offset + rng.randrange(0, 3)  # trailing markers or deleted records
    store, target_log, next_target = TranslationStore(), [], rng.randrange(0, 4)
    position = 0
    while position < len(source):
        batch = source[position : position + rng.randrange(1, 30)]
        targets = []
        for s in batch:
            next_target += 1 if rng.random() < 0.9 else rng.randrange(2, 4)  # markers
            targets.append(next_target - 1)
            target_log.append((next_target - 1, s))
        next_target += rng.randrange(0, 2)  # a commit marker after the batch
        store.add_syncs(P, sync_points(batch, targets, lag_max))
        if replays and rng.random() < 0.3:
            continue  # crashed before saving progress: the batch is written again
        position += len(batch)
    return store, target_log, read_until, source


def assert_exact(target_log, upstream: int, downstream: int) -> None:
    """Reading from `downstream` re-reads nothing before `upstream` and skips nothing after."""
    read = {s for t, s in target_log if t >= downstream}
    assert all(s >= upstream for s in read), (upstream, downstream)
    replicated_after = {s for _, s in target_log if s >= upstream}
    assert replicated_after <= read, (upstream, downstream)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.booleans())
def test_every_committed_offset_translates_exactly(seed, replays):
    store, target_log, read_until, source = replicate(seed, replays=replays)
    for upstream in range(source[0], read_until + 1):
        translation = store.translate(P, upstream, read_until)
        assert translation.ok, (upstream, translation.reason)
        assert_exact(target_log, upstream, translation.offset)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32))
def test_target_offsets_translate_back_exactly(seed):
    store, target_log, _, source = replicate(seed, replays=False)
    by_target = dict(target_log)
    for downstream in range(target_log[0][0], target_log[-1][0] + 2):
        back = store.inverse(P, downstream)
        assert back.ok, (downstream, back.reason)
        # The source records before the answer that were replicated are exactly
        # the target records before `downstream`.
        before = {s for t, s in by_target.items() if t < downstream}
        assert before == {s for s in source if s < back.offset}


def test_offsets_not_yet_read_are_not_guessed():
    store = TranslationStore()
    store.add_syncs(P, [(10, 0), (19, 9)])
    assert store.translate(P, 20, read_until=20).offset == 10
    missing = store.translate(P, 21, read_until=20)
    assert not missing.ok and "not replicated yet" in missing.reason


def test_offsets_older_than_the_kept_syncs_say_so():
    store = TranslationStore()
    store.add_syncs(P, [(10, 0), (19, 9)])
    old = store.translate(P, 9, read_until=20)
    assert not old.ok and "older than the oldest kept offset sync" in old.reason


def test_contiguous_batches_make_one_run():
    store = TranslationStore()
    for start in range(0, 1000, 100):
        store.add_syncs(P, sync_points(range(start, start + 100), range(start, start + 100), 10))
    assert store.runs(P) == (Run(0, 0, 1000),)


def test_changes_name_every_run_written_or_removed():
    store = TranslationStore()
    store.add_syncs(P, [(0, 0), (9, 9)])
    store.drain_changes()
    store.add_syncs(P, [(20, 10), (29, 19)])  # a gap in the source: a new run
    changes = store.drain_changes()
    assert changes.upserts == {(P, 20): Run(20, 10, 10)}
    store.add_syncs(P, [(20, 30)])  # the same batch written again
    changes = store.drain_changes()
    assert changes.upserts == {(P, 20): Run(20, 30, 1)}
    assert not changes.deletes  # rewritten under the same key


def test_republished_syncs_change_nothing():
    store = TranslationStore()
    store.add_syncs(P, [(0, 0), (5, 7), (9, 11)])
    store.drain_changes()
    store.add_syncs(P, [(5, 7), (9, 11)])
    assert not store.drain_changes()


def test_pruning_keeps_the_run_the_log_start_falls_in_or_after():
    store = TranslationStore()
    store.add_syncs(P, [(0, 0), (9, 9), (20, 10), (29, 19), (40, 20), (49, 29)])
    assert store.prune({P: 25}) == 1
    assert [r.upstream for r in store.runs(P)] == [20, 40]
    assert store.translate(P, 35, read_until=50).offset == 20
    assert store.prune({P: 35}) == 0  # offsets 35..39 still translate through run 20


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32))
def test_runs_read_back_from_a_compacted_log_give_the_same_store(seed):
    """What the runs topic keeps (the latest record per key, in write order) rebuilds the store."""
    rng = random.Random(seed)
    store, log = TranslationStore(), []
    upstream = downstream = 0
    for _ in range(rng.randrange(1, 40)):
        if log and rng.random() < 0.2:  # a replay from an earlier offset
            upstream = max(0, upstream - rng.randrange(1, 20))
        batch = list(range(upstream, upstream + rng.randrange(1, 15)))
        targets = list(range(downstream, downstream + len(batch)))
        store.add_syncs(P, sync_points(batch, targets, 5))
        upstream, downstream = batch[-1] + rng.randrange(1, 3), targets[-1] + rng.randrange(1, 3)
        changes = store.drain_changes()
        log += [(key, None) for key in sorted(changes.deletes)]
        log += list(changes.upserts.items())
    if rng.random() < 0.5:
        store.prune({P: rng.randrange(0, upstream + 1)})
        changes = store.drain_changes()
        log += [(key, None) for key in sorted(changes.deletes)]
    latest = {}
    for position, (key, run) in enumerate(log):
        latest.pop(key, None)  # a key's latest record sits at its latest position
        latest[key] = (position, run)
    reloaded = TranslationStore()
    reloaded.load((k[0], run) for k, (_, run) in latest.items() if run is not None)
    assert reloaded.runs(P) == store.runs(P)


def test_a_later_run_replaces_what_earlier_ones_said_from_its_start():
    store = TranslationStore()
    store.load([(P, Run(0, 0, 100)), (P, Run(150, 100, 50)), (P, Run(50, 300, 10))])
    assert store.runs(P) == (Run(0, 0, 50), Run(50, 300, 10))


def test_offsets_before_every_run_precede_the_runs():
    store = TranslationStore()
    assert not store.precedes_runs(P, 0)  # no runs: nothing shows what was copied after
    store.add_syncs(P, [(60, 60), (99, 99)])
    assert store.precedes_runs(P, 59)
    assert not store.precedes_runs(P, 60)
    assert not store.precedes_runs(P, 1_000)
    assert not store.translate(P, 59, 100).ok
