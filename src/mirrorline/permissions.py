"""The Kafka ACLs a flow needs, on its source and on its target (least privilege).

One list, computed from a flow's configuration, serves three purposes:
`mirrorline acls` prints it for the people who grant ACLs, the flow's
permission check compares it with what the brokers allow (`engine.access`),
and the tests grant exactly this and nothing more.

What a flow `A->B` does, and the ACLs that follow (principal: the user each
cluster's settings log in as):

Source A
  - reads the replicated topics: READ, DESCRIBE; copies their configs:
    DESCRIBE_CONFIGS;
  - reads the checkpointed groups' committed offsets: DESCRIBE on the groups;
  - copies topic ACLs (`sync.topic.acls.enabled`): DESCRIBE on the cluster;
  - Mirrorline's own readers use consumer groups named `mirrorline...`
    (they never join or commit): DESCRIBE, READ on that prefix;
  - offset syncs on the source (`offset-syncs.topic.location = source`, the
    default): CREATE, WRITE, READ, DESCRIBE on `mm2-offset-syncs.B.internal`.
    With the syncs on the target the source needs nothing but read access.
Target B
  - creates and writes the remote topics, adds partitions, copies configs:
    CREATE, WRITE, READ, DESCRIBE, ALTER, ALTER_CONFIGS, DESCRIBE_CONFIGS;
  - internal topics: `A.checkpoints.internal`, the offset
    syncs when they live here, and Mirrorline's own `mirrorline.*.internal`
    (progress, leadership, metadata, raw metrics): CREATE, WRITE, READ, DESCRIBE,
    DESCRIBE_CONFIGS;
  - leadership and readers' groups `mirrorline...`: READ, DESCRIBE;
  - group offset sync (`sync.group.offsets.enabled`): READ, DESCRIBE on the
    synced groups (committing needs READ on the group and on the topic);
  - progress (always) and exactly-once writes are transactions: WRITE,
    DESCRIBE on transactional ids `mirrorline.` (prefixed);
  - heartbeats, for every pair of clusters (`emit.heartbeats.enabled`,
    replicated or not, as MirrorMaker 2 does): CREATE, WRITE, READ, DESCRIBE,
    DESCRIBE_CONFIGS on `heartbeats`;
  - topic ACL sync: DESCRIBE and ALTER on the cluster (to read and write ACLs).

Taking a flow over from MirrorMaker 2 (`takeover_grants`, printed by
`mirrorline acls --takeover`) reads, on the target, MM2's Connect offsets
topic (READ, DESCRIBE) and asks whether MM2's Connect group still has members
(DESCRIBE on the group). They are listed apart because a flow that never had
a predecessor does not need them; without them the offsets topic is invisible
and the flow starts at `start.position`.

Topic and group filters are regular expressions, which ACLs cannot express:
a literal name becomes a LITERAL resource, `prefix.*` a PREFIXED one, and
anything else the wildcard `*` (`Grant.note` says so).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mirrorline.config.model import FlowConfig
from mirrorline.filters import NameFilter
from mirrorline.java_classes import is_java
from mirrorline.predecessor.mm2_state import group_of, offsets_topic_of

__all__ = [
    "Grant",
    "heartbeat_grants",
    "merged",
    "probe_topic",
    "remote_resource",
    "required_grants",
    "takeover_grants",
]

OWN_PREFIX = "mirrorline"
OWN_TOPICS_PREFIX = "mirrorline."

CLUSTER = "kafka-cluster"  # the name Kafka gives the one CLUSTER resource

_READ = ("READ", "DESCRIBE")
_SOURCE_TOPIC = ("READ", "DESCRIBE", "DESCRIBE_CONFIGS")
_OWN_TOPIC = ("CREATE", "WRITE", "READ", "DESCRIBE", "DESCRIBE_CONFIGS")
_TRANSACTIONS = ("WRITE", "DESCRIBE")
_TXN_WHY = "progress and exactly-once transactions"
_REMOTE_TOPIC = (
    "CREATE",
    "WRITE",
    "READ",
    "DESCRIBE",
    "ALTER",
    "ALTER_CONFIGS",
    "DESCRIBE_CONFIGS",
)
# Names written plainly: letters, digits, `-`, `_` and dots (escaped or not).
_PLAIN = re.compile(r"(?:[A-Za-z0-9_\-]|\\?\.)+")


@dataclass(frozen=True, order=True)
class Grant:
    """ALLOW `operations` on one resource pattern of one cluster, with the reason."""

    cluster: str
    resource: str  # TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID
    pattern: str  # LITERAL or PREFIXED
    name: str
    operations: tuple[str, ...]
    why: str
    note: str = ""

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.cluster, self.resource, self.pattern, self.name)

    def covers(self, resource: str, name: str) -> bool:
        """Whether this grant's pattern applies to resource `name`."""
        if resource != self.resource:
            return False
        if self.pattern == "PREFIXED":
            return name.startswith(self.name)
        return self.name in ("*", name)

    def kafka_acls_command(self, principal: str) -> str:
        """The `kafka-acls.sh` command granting this to `principal` (`User:NAME`)."""
        resource = {
            "TOPIC": f"--topic '{self.name}'",
            "GROUP": f"--group '{self.name}'",
            "TRANSACTIONAL_ID": f"--transactional-id '{self.name}'",
            "CLUSTER": "--cluster",
        }[self.resource]
        operations = " ".join(
            f"--operation {op.title().replace('_', '')}" for op in self.operations
        )
        pattern = (
            "" if self.pattern == "LITERAL" else f" --resource-pattern-type {self.pattern.lower()}"
        )
        return (
            f"kafka-acls.sh --bootstrap-server <{self.cluster}> "
            f"--command-config <admin.properties> --add --allow-principal {principal} "
            f"{operations} {resource}{pattern}"
        )


def required_grants(flow: FlowConfig) -> list[Grant]:
    """Every ACL the flow's source and target principals need (see the module)."""
    src, dst = flow.source, flow.target
    grants: list[Grant] = []
    for pattern, name, note in _resources(_chosen(flow.topic_filter)):
        grants.append(Grant(src, "TOPIC", pattern, name, _SOURCE_TOPIC, "read topics", note))
        remote_pattern, remote_name = remote_resource(flow, pattern, name)
        grants.append(
            Grant(dst, "TOPIC", remote_pattern, remote_name, _REMOTE_TOPIC, "remote topics", note)
        )
    grants += [
        Grant(src, "GROUP", "PREFIXED", OWN_PREFIX, _READ, "Mirrorline's readers"),
        Grant(dst, "GROUP", "PREFIXED", OWN_PREFIX, _READ, "leadership, readers"),
        Grant(dst, "TOPIC", "PREFIXED", OWN_TOPICS_PREFIX, _OWN_TOPIC, "Mirrorline's topics"),
        Grant(dst, "TRANSACTIONAL_ID", "PREFIXED", OWN_TOPICS_PREFIX, _TRANSACTIONS, _TXN_WHY),
        Grant(
            flow.offset_syncs_cluster,
            "TOPIC",
            "LITERAL",
            flow.offset_syncs_topic,
            _OWN_TOPIC,
            "offset syncs",
        ),
    ]
    if flow.value("heartbeats.replication.enabled"):
        heartbeats = flow.policy.heartbeats_topic()
        remote = flow.remote_topic(heartbeats)
        grants.append(Grant(src, "TOPIC", "LITERAL", heartbeats, _READ, "replicated heartbeats"))
        grants.append(
            Grant(dst, "TOPIC", "LITERAL", remote, _REMOTE_TOPIC, "replicated heartbeats")
        )
    if flow.value("emit.checkpoints.enabled"):
        checkpoints = flow.policy.checkpoints_topic(src)
        grants.append(Grant(dst, "TOPIC", "LITERAL", checkpoints, _OWN_TOPIC, "checkpoints"))
        for pattern, name, note in _resources(_chosen(flow.group_filter)):
            grants.append(
                Grant(src, "GROUP", pattern, name, ("DESCRIBE",), "checkpointed groups", note)
            )
            if flow.value("sync.group.offsets.enabled"):
                grants.append(Grant(dst, "GROUP", pattern, name, _READ, "group offset sync", note))
    if flow.value("sync.topic.acls.enabled"):
        grants.append(Grant(src, "CLUSTER", "LITERAL", CLUSTER, ("DESCRIBE",), "ACL sync"))
        grants.append(Grant(dst, "CLUSTER", "LITERAL", CLUSTER, ("DESCRIBE", "ALTER"), "ACL sync"))
    return grants


def takeover_grants(flow: FlowConfig) -> list[Grant]:
    """What taking the flow over from MirrorMaker 2 needs on its target (see the module)."""
    why = "taking over from MirrorMaker 2"
    topic = offsets_topic_of(flow.source, flow.value("offset.storage.topic"))
    group = group_of(flow.source, flow.value("group.id"))
    return [
        Grant(flow.target, "TOPIC", "LITERAL", topic, _READ, why),
        Grant(flow.target, "GROUP", "LITERAL", group, ("DESCRIBE",), why),
    ]


def heartbeat_grants(flow: FlowConfig) -> list[Grant]:
    """What emitting heartbeats for `flow` needs on its target.

    MirrorMaker 2 emits heartbeats for every pair of clusters, replicated or
    not (`emit.heartbeats.enabled`), so these come from the heartbeat flows.
    """
    if not flow.value("emit.heartbeats.enabled"):
        return []
    topic = flow.policy.heartbeats_topic()
    return [Grant(flow.target, "TOPIC", "LITERAL", topic, _OWN_TOPIC, "heartbeats")]


def probe_topic(flow: FlowConfig) -> str:
    """A topic name the flow's source principal may describe, for the flow's health probe.

    Asking the source about a name it may not describe would be answered too,
    but every such request is a denial in the broker's authorizer log.
    """
    for _, name, _ in _resources(_chosen(flow.topic_filter)):
        if name != "*":
            return name
    return flow.offset_syncs_topic


def merged(grants: Iterable[Grant]) -> list[Grant]:
    """One grant per resource pattern, with the union of operations and reasons."""
    by_key: dict[tuple[str, str, str, str], Grant] = {}
    for grant in grants:
        known = by_key.get(grant.key)
        if known is None:
            by_key[grant.key] = grant
            continue
        operations = tuple(dict.fromkeys(known.operations + grant.operations))
        why = known.why if grant.why in known.why else f"{known.why}; {grant.why}"
        by_key[grant.key] = Grant(*grant.key, operations, why, known.note or grant.note)
    return sorted(by_key.values())


def _chosen(names: NameFilter) -> Sequence[str]:
    """The patterns a filter may select: any name when a Java class chooses."""
    return (".*",) if is_java(names) else names.include


def _resources(patterns: Sequence[str]) -> Iterable[tuple[str, str, str]]:
    """(pattern type, name, note) of the ACL resources covering filter regexes."""
    for regex in patterns:
        if regex in (".*", ".+"):
            yield "LITERAL", "*", ""
        elif regex.endswith(".*") and _PLAIN.fullmatch(regex[:-2]):
            yield "PREFIXED", _unescape(regex[:-2]), ""
        elif _PLAIN.fullmatch(regex):
            yield "LITERAL", _unescape(regex), ""
        else:
            yield "LITERAL", "*", f"the pattern {regex!r} is no ACL resource; all names"


def remote_resource(flow: FlowConfig, pattern: str, name: str) -> tuple[str, str]:
    """(pattern type, name) on the target of the source topic resource (`pattern`, `name`).

    Names become remote names under the flow's policy; the wildcard `*` becomes
    the prefix of all remote topics from the source (`A.`), or stays `*` under a
    policy that keeps names.
    """
    if name == "*":
        remote = flow.remote_topic("orders")  # a policy may refuse an empty name
        prefix = remote.removesuffix("orders") if remote.endswith("orders") else ""
        return ("PREFIXED", prefix) if prefix else ("LITERAL", "*")
    return pattern, flow.remote_topic(name)


def _unescape(text: str) -> str:
    return text.replace("\\.", ".")
