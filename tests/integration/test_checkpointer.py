"""The checkpointer's rounds on real clusters, with the flow's progress given by hand.

The runs say source offsets 0..399 were copied to 1000..1399; each round is told
how far the flow's saved progress reaches (`read_until`), as the driver does.
"""

from __future__ import annotations

from mirrorline.control.checkpointing import Checkpointer
from mirrorline.control.translation import Run, TranslationStore
from mirrorline.flow_context import FlowContext
from support.kafka_io import checkpoints_of, commit_offsets, create_topic, unique_name
from support.own_flow import own_flow


def _checkpointed(two_clusters, group_prefix: str):
    """A flow whose runs cover offsets 0..399 of a new topic, its checkpointer, a
    function committing a group's offset on the source and one reading its checkpoints."""
    east, west = two_clusters
    _, flow = own_flow(east, west)
    topic, group = unique_name("orders"), unique_name(group_prefix)
    create_topic(east.bootstrap_servers, topic, partitions=1)
    remote = flow.remote_topic(topic)
    store = TranslationStore()
    store.load([((topic, 0), Run(0, 1000, 400))])

    def commit(offset: int) -> None:
        commit_offsets(east.bootstrap_servers, group, topic, {0: offset})

    def checkpoints() -> dict[int, tuple[int, int]]:
        found = checkpoints_of(west.bootstrap_servers, flow.source, group, remote)
        return {p: (c.upstream_offset, c.downstream_offset) for p, c in found.items()}

    checkpointer = Checkpointer(FlowContext(flow))
    return topic, store, checkpointer, commit, checkpoints


def test_a_group_ahead_of_the_progress_gets_its_newest_commit_the_progress_reached(
    two_clusters,
):
    topic, store, checkpointer, commit, checkpoints = _checkpointed(two_clusters, "keeps-up")

    def round_at(committed: int, read_until: int) -> dict[int, tuple[int, int]]:
        commit(committed)
        checkpointer.refresh_groups()
        checkpointer.emit(store, {topic: 1}, {(topic, 0): read_until})
        return checkpoints()

    try:
        # Always a step ahead of the progress, as a group at the head of the stream is.
        assert round_at(100, 50) == {}
        assert checkpointer.stats().untranslated == 1
        assert round_at(200, 150) == {0: (100, 1100)}
        assert round_at(300, 250) == {0: (200, 1200)}
        assert checkpointer.stats().untranslated == 0
        # Reset backwards while still ahead: the later commits no longer count.
        assert round_at(280, 260) == {0: (200, 1200)}
        assert round_at(290, 285) == {0: (280, 1280)}
        # Reached: its own offset, as always.
        assert round_at(300, 300) == {0: (300, 1300)}
    finally:
        checkpointer.close()


def test_between_rounds_a_commit_is_checkpointed_once_the_progress_passes_it(two_clusters):
    topic, store, checkpointer, commit, checkpoints = _checkpointed(two_clusters, "catches-up")

    def catch_up(read_until: int) -> int:
        return checkpointer.catch_up(store, {(topic, 0): read_until})

    try:
        commit(100)
        checkpointer.refresh_groups()
        assert checkpointer.emit(store, {topic: 1}, {(topic, 0): 50}) == 0  # noted, ahead
        # The group moves on, but a catch-up reads nothing from the source: it writes
        # the commit the round noted, once the progress has passed it.
        commit(300)
        assert catch_up(90) == 0
        assert checkpoints() == {}
        assert catch_up(120) == 1
        assert checkpoints() == {0: (100, 1100)}
        assert catch_up(400) == 0  # nothing noted any more
        assert checkpointer.stats().checkpoints_emitted == 1
    finally:
        checkpointer.close()
