"""What a running dev cluster says about itself: its registered brokers, partition
leaders and replicas in sync, and which node is the active controller; and the one
thing done to it here, moving leadership back to the preferred replicas.

Brokers are asked with Kafka's admin protocol (librdkafka): DescribeCluster lists
the brokers registered and not fenced, which is what "a node is up" means to
clients; Metadata gives each partition's leader, replicas and in-sync replicas.
A partition is under-replicated while it has fewer in-sync replicas than replicas.

The active controller cannot be asked that way: in KRaft a broker's metadata
answer names an arbitrary broker as "controller", and librdkafka cannot talk to
the controller quorum. Every voter, though, keeps its view of the quorum in its
metadata log directory (``data/__cluster_metadata-0/quorum-state``, JSON with
``leaderId`` and ``leaderEpoch``), rewritten on every election it takes part in or
learns of. Among the running nodes, the view with the highest epoch that names a
leader is the current one; before any node knows of a leader there is none.

A node that comes back after a restart leads nothing: its partitions stay led by
the nodes that took over until the brokers' periodic check moves leadership back
(``leader.imbalance.check.interval.seconds``, 5 minutes by default), which every
client of those partitions then feels as a stall of a few seconds, minutes after
the restart. `elect_preferred_leaders` does it at once, as an operator's restart
procedure does with ``kafka-leader-election --election-type preferred``.

The admin clients here log to a silent logger: a stopped node in the bootstrap
list would otherwise print a refused connection every second.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import ElectionType, KafkaException

from mirrorline.admin_client import AdminClient
from mirrorline.devnode import DevNode

__all__ = [
    "active_controller",
    "admin_client",
    "elect_preferred_leaders",
    "leader_of",
    "registered_brokers",
    "under_replicated",
    "wait_in_sync",
]

_quiet = logging.getLogger("mirrorline.devhealth.librdkafka")
_quiet.addHandler(logging.NullHandler())
_quiet.propagate = False


def admin_client(config: Mapping[str, str]) -> AdminClient:
    """An admin client of a dev cluster that logs nothing (see the module)."""
    settings: dict[str, Any] = {**config, "logger": _quiet}
    return AdminClient(settings)


def registered_brokers(
    config: Mapping[str, str], timeout: float = 2.0, *, cluster_id: str | None = None
) -> set[int]:
    """Ids of the brokers registered (and not fenced); empty if the cluster does not answer,
    or if a cluster other than `cluster_id` (when given) answers at those addresses."""
    admin = admin_client(config)  # kept until the answer is in: a dropped client drops its request
    try:
        answer = admin.describe_cluster(request_timeout=timeout).result(timeout + 5)
    except Exception:  # noqa: BLE001 - not answering yet is an answer here
        return set()
    if cluster_id is not None and answer.cluster_id != cluster_id:
        return set()
    return {node.id for node in answer.nodes}


def under_replicated(config: Mapping[str, str], timeout: float = 10.0) -> list[str]:
    """``topic[partition]`` of every partition with fewer in-sync replicas than replicas."""
    metadata = admin_client(config).list_topics(timeout=timeout)
    return sorted(
        f"{name}[{partition.id}]"
        for name, topic in metadata.topics.items()
        for partition in topic.partitions.values()
        if len(partition.isrs) < len(partition.replicas)
    )


def wait_in_sync(
    config: Mapping[str, str], deadline: float, progress: Callable[[str], None]
) -> list[str]:
    """Wait until no partition is under-replicated, saying which are every 5 s; those still
    under-replicated at `deadline` (none: in sync)."""
    reported = 0.0
    while lagging := under_replicated(config):
        if time.monotonic() > deadline:
            return lagging
        if time.monotonic() - reported >= 5:
            progress(f"{len(lagging)} under-replicated partition(s): {', '.join(lagging[:5])}")
            reported = time.monotonic()
        time.sleep(0.5)
    return []


def leader_of(config: Mapping[str, str], topic: str, partition: int, timeout: float = 10.0) -> int:
    """The node id leading `topic` partition `partition`; -1 while it has no leader.

    Raises LookupError if the topic or partition does not exist, or while the cluster
    gives no metadata (every node it asked is down or electing).
    """
    try:
        metadata = admin_client(config).list_topics(topic, timeout=timeout).topics.get(topic)
    except KafkaException as exc:
        raise LookupError(f"no metadata for topic {topic!r}: {exc.args[0].str()}") from None
    if metadata is None or metadata.error is not None:
        reason = metadata.error.str() if metadata is not None and metadata.error else "unknown"
        raise LookupError(f"topic {topic!r}: {reason}")
    found = metadata.partitions.get(partition)
    if found is None:
        raise LookupError(f"topic {topic!r} has no partition {partition}")
    return int(found.leader)


def elect_preferred_leaders(config: Mapping[str, str], timeout: float = 30.0) -> list[str]:
    """Move the leadership of every partition not led by its preferred replica back to it;
    ``topic[partition]`` of those moved.

    Raises RuntimeError naming the partitions the cluster could not move (their
    preferred replica not in sync, for one), or when it does not answer in `timeout`.
    """
    admin = admin_client(config)  # kept until the answer is in
    try:
        moved = admin.elect_leaders(ElectionType.PREFERRED, None).result(timeout)
    except KafkaException as exc:
        raise RuntimeError(f"preferred-leader election failed: {exc.args[0].str()}") from None
    except TimeoutError:
        raise RuntimeError(f"preferred-leader election: no answer within {timeout:.0f} s") from None
    failed = {tp: err for tp, err in moved.items() if err is not None}
    if failed:
        names = ", ".join(f"{tp.topic}[{tp.partition}]: {err.str()}" for tp, err in failed.items())
        raise RuntimeError(f"preferred-leader election failed for {names}")
    return sorted(f"{tp.topic}[{tp.partition}]" for tp in moved)


def active_controller(nodes: Iterable[DevNode]) -> int | None:
    """The id of the active controller as the running `nodes` record it; None if unknown."""
    best: tuple[int, int] | None = None
    for node in nodes:
        state = _quorum_state(Path(node.directory))
        if state is None:
            continue
        epoch, leader = state
        if leader >= 0 and (best is None or epoch > best[0]):
            best = (epoch, leader)
    return None if best is None else best[1]


def _quorum_state(node_directory: Path) -> tuple[int, int] | None:
    path = node_directory / "data" / "__cluster_metadata-0" / "quorum-state"
    try:
        state = json.loads(path.read_text())
        return int(state["leaderEpoch"]), int(state["leaderId"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
