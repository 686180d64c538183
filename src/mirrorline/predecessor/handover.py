"""Taking a flow over from the MirrorMaker 2 that replicated it until now.

For the partitions of a flow that have no progress of Mirrorline's own (all
of them on its first start), `plan_handover` looks for MM2's committed source
offsets on the target (`mm2_state`). When there are some:

1. MM2 must not run the flow any more: while its Connect group has members the
   plan is refused (`PredecessorRunning`, naming the group and its members) and
   nothing is written; the flow tries again later.
2. Each partition MM2 committed starts where MM2's copy really ends: the
   target's tail is compared with the source records from the committed
   offset on (`tail_match`), so records MM2 wrote after its last commit are
   not copied again. The read starts at MM2's last offset sync at or before
   the committed offset, which bounds it to what MM2 wrote since.
3. The range MM2 copied keeps translating: MM2's offset syncs for the
   partition, then the exact pairs the comparison found, become the first
   syncs of the flow's translation store. A group committed inside MM2's range
   translates as MM2 would from its syncs (exactly where they are in line),
   one at the tail exactly, and one after the handover exactly from
   Mirrorline's own runs.

A partition MM2 copied but never committed (it was killed before its first
offset commit) is followed from MM2's latest offset sync for it: the record
there was copied, so the comparison starts at that pair. Partitions with
neither a commit nor a sync start at `start.position` as usual.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from mirrorline.config.model import FlowConfig
from mirrorline.flow_context import FlowContext
from mirrorline.formats import FormatError, OffsetSync
from mirrorline.kafka import ClusterClients, partition_offsets, read_to_end
from mirrorline.predecessor.mm2_state import (
    committed_offsets,
    connect_group,
    group_of,
    offsets_topic_of,
)
from mirrorline.predecessor.records import read_digests
from mirrorline.predecessor.tail_match import match_tail

log = logging.getLogger(__name__)

__all__ = ["Handover", "PartitionHandover", "PredecessorRunning", "plan_handover", "preview"]

SourcePartition = tuple[str, int]
Pair = tuple[int, int]  # (source offset, target offset)

#: The most target records read to find where MM2's copy of one partition ends.
MAX_TAIL = 1_000_000


class PredecessorRunning(RuntimeError):
    """MirrorMaker 2 still replicates the flow; the message says what to stop."""


@dataclass(frozen=True)
class PartitionHandover:
    """Where one source partition continues after MM2, and the mapping of MM2's copy."""

    partition: SourcePartition
    committed: int  # the last source offset MM2 committed as copied
    start: int  # the first source offset Mirrorline copies
    syncs: tuple[Pair, ...] = ()
    note: str = ""  # how the start was found, when not by the tail

    def but(self, *, note: str) -> PartitionHandover:
        """This one with `note` said first."""
        return replace(self, note="; ".join(n for n in (note, self.note) if n))

    @property
    def past_commit(self) -> int:
        """Source offsets MM2 copied after its last commit (found on the target)."""
        return self.start - self.committed - 1


@dataclass(frozen=True)
class Handover:
    """A flow's takeover from MM2: its offsets topic, its group and every partition."""

    offsets_topic: str
    group: str
    partitions: tuple[PartitionHandover, ...] = field(default=())

    def starts(self) -> dict[SourcePartition, int]:
        return {p.partition: p.start for p in self.partitions}

    def describe(self) -> str:
        """One line for `config check` and the log: where the flow continues."""
        shown = ", ".join(
            f"{topic}[{number}]@{p.start}"
            for p in self.partitions[:8]
            for topic, number in (p.partition,)
        )
        more = len(self.partitions) - 8
        past = sum(p.past_commit for p in self.partitions)
        return (
            f"takes over from MirrorMaker 2 at {shown}{f' and {more} more' if more > 0 else ''} "
            f"(its offsets in {self.offsets_topic}; {past} records it wrote after its last "
            "commit are not copied again)"
        )


def plan_handover(context: FlowContext, partitions: Iterable[SourcePartition]) -> Handover | None:
    """The takeover from MM2 of `partitions` (without progress); None when MM2 copied
    none of them (neither committed nor synced).

    Raises `PredecessorRunning` while MM2's Connect group has members and
    `KafkaOperationError` when a cluster cannot be read.
    """
    flow = context.flow
    topic = offsets_topic_of(flow.source, flow.value("offset.storage.topic"))
    wanted = set(partitions)
    everything = committed_offsets(context.target.consumer_settings, topic, flow.source)
    if everything is None:
        return None  # no MM2 ran against this target
    committed = {tp: offset for tp, offset in everything.items() if tp in wanted}
    syncs = _mm2_syncs(context, wanted)
    synced_only = {tp: s[-1][0] for tp, s in syncs.items() if s and tp not in committed}
    if not committed and not synced_only:
        return None
    group_name = group_of(flow.source, flow.value("group.id"))
    group = connect_group(context.target.admin, group_name)
    if group is not None and group.active:
        raise PredecessorRunning(
            f"MirrorMaker 2 still replicates {flow.name}: its Kafka Connect group "
            f"{group_name} on {flow.target} has {len(group.members)} member(s) "
            f"({', '.join(group.members)}); stop MirrorMaker 2 for this flow first "
            "(a killed worker leaves the group when its session times out). "
            "Nothing was written"
        )
    remotes = {tp: (flow.remote_topic(tp[0]), tp[1]) for tp in {**committed, **synced_only}}
    ends = partition_offsets(
        context.target.admin, remotes.values(), "latest", timeout=30.0, what=f"target {flow.target}"
    )
    found = [
        _partition_handover(context, tp, offset, ends[remotes[tp]], syncs.get(tp, []))
        or _after_commit(tp, offset, remotes[tp], syncs.get(tp, []))
        for tp, offset in sorted(committed.items())
    ]
    for tp, offset in sorted(synced_only.items()):
        followed = _partition_handover(context, tp, offset, ends[remotes[tp]], syncs[tp])
        if followed is None:  # not found on the target: start.position decides
            log.warning(
                "flow %s: MirrorMaker 2 committed no offset for %s[%d] and its copy of offset "
                "%d is not on %s[%d]; the partition starts at start.position",
                flow.name,
                *tp,
                offset,
                *remotes[tp],
            )
            continue
        note = (
            f"MirrorMaker 2 committed no offset for {tp[0]}[{tp[1]}]; its copy was followed "
            f"from its offset sync of offset {offset}"
        )
        found.append(followed.but(note=note))
    return Handover(topic, group_name, tuple(found))


def _partition_handover(
    context: FlowContext,
    tp: SourcePartition,
    committed: int,
    end: int,
    mm2_syncs: Sequence[Pair],
) -> PartitionHandover | None:
    """Where MM2's copy of `tp` ends, from the record at `committed` on; None when the
    remote partition's tail (it ends at `end`) does not hold that record."""
    flow = context.flow
    remote = (flow.remote_topic(tp[0]), tp[1])
    anchors = [d for u, d in mm2_syncs if u <= committed and d < end]
    lower = max(anchors[-1] if anchors else 0, end - MAX_TAIL)
    target = read_digests(context.target.consumer_settings, remote, lower, end, committed=True)
    source = read_digests(context.source.consumer_settings, tp, committed, None, limit=len(target))
    found = match_tail([d for _, d in target], [d for _, d in source])
    if found is None:
        return None
    earlier = tuple((u, d) for u, d in mm2_syncs if u <= committed)
    pairs = tuple(
        (s, t)
        for (s, _), (t, _) in zip(source[: found.length], target[-found.length :], strict=True)
    )
    note = ""
    if found.ambiguous:
        note = (
            f"{remote[0]}[{remote[1]}] ends with records repeated in a row; the earliest "
            f"possible end is taken, so up to {found.alternatives[-1] - found.length} "
            "records may be copied twice"
        )
    start = pairs[-1][0] + 1
    return PartitionHandover(
        tp, committed, start, tuple(p for p in earlier if p[0] < pairs[0][0]) + pairs, note
    )


def _after_commit(
    tp: SourcePartition, committed: int, remote: SourcePartition, mm2_syncs: Sequence[Pair]
) -> PartitionHandover:
    """Resuming after MM2's committed offset, its tail not found on the target."""
    return PartitionHandover(
        tp,
        committed,
        committed + 1,
        tuple((u, d) for u, d in mm2_syncs if u <= committed),
        note=f"the record at {tp[0]}[{tp[1]}] offset {committed} is not at the end of "
        f"{remote[0]}[{remote[1]}]; resuming after MirrorMaker 2's committed offset",
    )


def _mm2_syncs(
    context: FlowContext, partitions: set[SourcePartition]
) -> Mapping[SourcePartition, list[Pair]]:
    """MM2's offset syncs of `partitions`, in the order it wrote them."""
    flow = context.flow
    found: dict[SourcePartition, list[Pair]] = defaultdict(list)
    records = read_to_end(
        context.offset_syncs.consumer_settings, flow.offset_syncs_topic, missing_ok=True
    )
    for record in records:
        try:
            sync = OffsetSync.decode(record.key(), record.value())
        except FormatError:
            continue
        tp = (sync.topic, sync.partition)
        if tp in partitions:
            found[tp].append((sync.upstream_offset, sync.downstream_offset))
    return found


def preview(
    flow: FlowConfig,
    target: ClusterClients,
    progress: Mapping[SourcePartition, int],
    timeout: float,
) -> str | None:
    """What the flow's first start does about MM2, for `config check`; None when nothing.

    Reads only MM2's committed offsets and its group: where MM2's copy really
    ends is found by the driver, at or after the offsets shown.
    """
    topic = offsets_topic_of(flow.source, flow.value("offset.storage.topic"))
    found = committed_offsets(target.consumer_settings, topic, flow.source, timeout=timeout)
    committed = {
        tp: offset
        for tp, offset in (found or {}).items()
        if tp not in progress and flow.should_replicate_topic(tp[0])
    }
    if committed:
        shown = ", ".join(f"{t}[{p}]@{c + 1}" for (t, p), c in sorted(committed.items())[:8])
        more = len(committed) - 8
        where = f"at {shown}{f' and {more} more' if more > 0 else ''} or after"
        how = f"past its committed offsets in {topic}, where its copy on {flow.target} really ends"
    elif found == {} and not any(flow.topic_filter.matches(t) for t, _ in progress):
        # MM2 started, and was stopped before its first commit; Mirrorline never copied a
        # topic the flow selects (a heartbeats topic it copied says nothing about them)
        where = "where its offset syncs show its copy ends"
        how = f"it committed no offsets in {topic}"
    else:
        return None
    group_name = group_of(flow.source, flow.value("group.id"))
    group = connect_group(target.admin, group_name, timeout)
    if group is not None and group.active:
        return (
            f"waits for MirrorMaker 2 to stop: its group {group_name} on {flow.target} has "
            f"{len(group.members)} member(s); then takes over from it {where}"
        )
    return f"takes over from MirrorMaker 2 {where} ({how})"
