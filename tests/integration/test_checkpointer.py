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


def test_a_group_ahead_of_the_progress_gets_its_newest_commit_the_progress_reached(
    two_clusters,
):
    east, west = two_clusters
    _, flow = own_flow(east, west)
    src = flow.source
    topic, group = unique_name("orders"), unique_name("keeps-up")
    create_topic(east.bootstrap_servers, topic, partitions=1)
    remote = flow.remote_topic(topic)
    store = TranslationStore()
    store.load([((topic, 0), Run(0, 1000, 400))])
    checkpointer = Checkpointer(FlowContext(flow))

    def round_at(committed: int, read_until: int) -> dict[int, tuple[int, int]]:
        commit_offsets(east.bootstrap_servers, group, topic, {0: committed})
        checkpointer.refresh_groups()
        checkpointer.emit(store, {topic: 1}, {(topic, 0): read_until})
        found = checkpoints_of(west.bootstrap_servers, src, group, remote)
        return {p: (c.upstream_offset, c.downstream_offset) for p, c in found.items()}

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
