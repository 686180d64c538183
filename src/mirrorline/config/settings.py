"""The flow settings Mirrorline understands, with MirrorMaker 2's names and defaults.

A *flow setting* configures one replication flow (`source->target`) as a
whole, as opposed to the Kafka client settings of its consumers, producers and
admin clients (see `clients`). Each one is resolved per flow with the
precedence rules of `precedence`, then parsed with its parser here.

Defaults are MM2's (checked against Apache Kafka's `MirrorSourceConfig`,
`MirrorCheckpointConfig`, `MirrorHeartbeatConfig`, `MirrorConnectorConfig`,
`DefaultTopicFilter`, `DefaultGroupFilter`, `DefaultConfigPropertyFilter`,
Connect's `ConnectorConfig` and `DistributedConfig`). Settings that only
Mirrorline has are marked as such in their documentation.

Settings that make sense to MM2's Kafka Connect runtime but not to
Mirrorline are not here: `unapplied` lists them, with why each is ignored or
refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mirrorline.config.class_names import (
    DEFAULT_FORWARDING_ADMIN,
    DEFAULT_POLICY_CLASS,
    parse_class_name,
    parse_filter_class,
    parse_forwarding_admin,
    parse_header_converter,
)
from mirrorline.config.plugins import parse_plugin_path
from mirrorline.config.start_position import parse_start_position
from mirrorline.config.transforms import BYTE_ARRAY_CONVERTER
from mirrorline.config.values import (
    parse_bool,
    parse_choice,
    parse_int,
    parse_patterns,
    parse_positive_seconds,
    parse_replication_factor,
    parse_topic_name,
)
from mirrorline.filters import (
    DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS_EXCLUDE,
)

__all__ = [
    "FLOW_SETTINGS",
    "INTERVAL_LOOPS",
    "LEGACY_NAMES",
    "SettingSpec",
]


@dataclass(frozen=True)
class SettingSpec:
    """A flow setting: its name, default (as text), parser and meaning."""

    name: str
    default: str
    parse: Callable[[str], object]
    doc: str


def _join(entries: tuple[str, ...]) -> str:
    return ", ".join(entries)


_SPECS = [
    SettingSpec(
        "enabled", "false", parse_bool, "Whether the flow replicates (MM2: `A->B.enabled`)."
    ),
    SettingSpec("topics", ".*", parse_patterns, "Topics to replicate: names or regexes."),
    SettingSpec(
        "topics.exclude",
        _join(DEFAULT_TOPICS_EXCLUDE),
        parse_patterns,
        "Topics never to replicate; replaces the default list when set.",
    ),
    SettingSpec("groups", ".*", parse_patterns, "Consumer groups to checkpoint."),
    SettingSpec(
        "groups.exclude",
        _join(DEFAULT_GROUPS_EXCLUDE),
        parse_patterns,
        "Consumer groups never to checkpoint; replaces the default list when set.",
    ),
    SettingSpec(
        "config.properties.exclude",
        _join(DEFAULT_CONFIG_PROPERTIES_EXCLUDE),
        parse_patterns,
        "Topic-config properties never copied; replaces the default list when set.",
    ),
    SettingSpec(
        "use.defaults.from",
        "target",
        parse_choice(("target", "source")),
        "Whose defaults apply to topic configs left at their default on the source.",
    ),
    SettingSpec(
        "topic.filter.class",
        "org.apache.kafka.connect.mirror.DefaultTopicFilter",
        parse_filter_class("org.apache.kafka.connect.mirror.DefaultTopicFilter"),
        "MM2's default topic filter, or a Java class of the file's own (in plugin.path).",
    ),
    SettingSpec(
        "group.filter.class",
        "org.apache.kafka.connect.mirror.DefaultGroupFilter",
        parse_filter_class("org.apache.kafka.connect.mirror.DefaultGroupFilter"),
        "MM2's default group filter, or a Java class of the file's own (in plugin.path).",
    ),
    SettingSpec(
        "config.property.filter.class",
        "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
        parse_filter_class("org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter"),
        "MM2's default config property filter, or a Java class of the file's own (in plugin.path).",
    ),
    SettingSpec(
        "tasks.max",
        "1",
        lambda t: parse_int(t, minimum=1),
        "Most Spark tasks per micro-batch (Connect tasks in MM2). Unset: one task per "
        "executor task slot, at most one per source partition; the default 1 is MM2's and "
        "is not applied.",
    ),
    SettingSpec(
        "replication.factor",
        "2",
        parse_replication_factor,
        "Replication factor of remote topics Mirrorline creates; -1 for the broker default.",
    ),
    SettingSpec(
        "offset.lag.max",
        "100",
        lambda t: parse_int(t, minimum=0),
        "Emit an offset sync at least every this many records per partition.",
    ),
    SettingSpec(
        "offset-syncs.topic.location",
        "source",
        parse_choice(("source", "target")),
        "Cluster holding the flow's offset-syncs topic.",
    ),
    SettingSpec(
        "offset-syncs.topic.replication.factor",
        "3",
        parse_replication_factor,
        "Replication factor of the offset-syncs topic.",
    ),
    SettingSpec(
        "checkpoints.topic.replication.factor",
        "3",
        parse_replication_factor,
        "Replication factor of the checkpoints topic.",
    ),
    SettingSpec(
        "heartbeats.topic.replication.factor",
        "3",
        parse_replication_factor,
        "Replication factor of the heartbeats topic.",
    ),
    SettingSpec("emit.offset-syncs.enabled", "true", parse_bool, "Whether to emit offset syncs."),
    SettingSpec("refresh.topics.enabled", "true", parse_bool, "Whether to look for new topics."),
    SettingSpec("refresh.topics.interval.seconds", "600", parse_positive_seconds, "How often."),
    SettingSpec("refresh.groups.enabled", "true", parse_bool, "Whether to look for new groups."),
    SettingSpec("refresh.groups.interval.seconds", "600", parse_positive_seconds, "How often."),
    SettingSpec("sync.topic.configs.enabled", "true", parse_bool, "Whether to copy topic configs."),
    SettingSpec("sync.topic.configs.interval.seconds", "600", parse_positive_seconds, "How often."),
    SettingSpec("sync.topic.acls.enabled", "true", parse_bool, "Whether to copy topic ACLs."),
    SettingSpec("sync.topic.acls.interval.seconds", "600", parse_positive_seconds, "How often."),
    SettingSpec(
        "emit.checkpoints.enabled", "true", parse_bool, "Whether to emit consumer checkpoints."
    ),
    SettingSpec("emit.checkpoints.interval.seconds", "60", parse_positive_seconds, "How often."),
    SettingSpec(
        "emit.heartbeats.enabled", "true", parse_bool, "Whether to emit heartbeats to the target."
    ),
    SettingSpec("emit.heartbeats.interval.seconds", "1", parse_positive_seconds, "How often."),
    SettingSpec(
        "emit.metrics.enabled",
        "true",
        parse_bool,
        "Mirrorline: whether the flow writes raw metrics (batches, status, lag, checkpoint "
        "latency) to mirrorline.metrics.internal on its target, for the service and `status`.",
    ),
    SettingSpec(
        "emit.metrics.interval.seconds",
        "5",
        parse_positive_seconds,
        "Mirrorline: how often the flow's status and lag are written (batches are written "
        "as they are committed).",
    ),
    SettingSpec(
        "sync.group.offsets.enabled",
        "false",
        parse_bool,
        "Whether to commit translated offsets to idle groups on the target.",
    ),
    SettingSpec("sync.group.offsets.interval.seconds", "60", parse_positive_seconds, "How often."),
    SettingSpec(
        "heartbeats.replication.enabled",
        "true",
        parse_bool,
        "Whether heartbeats topics are replicated even when the topic filter leaves them out.",
    ),
    SettingSpec(
        "exactly.once.source.support",
        "disabled",
        parse_choice(("disabled", "enabled", "preparing")),
        "Write records and progress in Kafka transactions (`enabled`).",
    ),
    SettingSpec(
        "plugin.path",
        "",
        parse_plugin_path,
        "Jars and directories of jars with the file's own classes (as Kafka Connect's "
        "plugin.path): its Java policy and filters, asked in Mirrorline's plugin bridge; "
        "Spark's driver and executors load them too.",
    ),
    SettingSpec(
        "forwarding.admin.class",
        DEFAULT_FORWARDING_ADMIN,
        parse_forwarding_admin,
        "MM2's admin for topics, configs and ACLs: only the default (Mirrorline's own admin "
        "client does that work); another class is an error.",
    ),
    SettingSpec(
        "replication.policy.class",
        DEFAULT_POLICY_CLASS,
        parse_class_name,
        "Naming policy: MM2's built-in class names, a Java class of the file's own (in "
        "plugin.path), or a Python `package.module:Class`.",
    ),
    SettingSpec(
        "replication.policy.separator",
        ".",
        lambda t: t.strip(),
        "Separator between source alias and topic in remote topic names.",
    ),
    SettingSpec(
        "replication.policy.internal.topic.separator.enabled",
        "true",
        parse_bool,
        "Whether internal topic names use the custom separator too.",
    ),
    SettingSpec(
        "topic.rename.format",
        "",
        lambda t: t.strip(),
        "Confluent Replicator's remote topic names, `${topic}.replica`: the rename "
        "policy instead of replication.policy.class.",
    ),
    SettingSpec(
        "start.position",
        "earliest",
        parse_start_position,
        "Mirrorline: where a new flow starts (earliest, latest, time, or explicit offsets).",
    ),
    SettingSpec(
        "offset.storage.topic",
        "",
        lambda t: t.strip(),
        "MirrorMaker 2's Kafka Connect offsets topic on the target, read when the flow "
        "takes over from MM2 (unset: dedicated mode's mm2-offsets.<source>.internal).",
    ),
    SettingSpec(
        "group.id",
        "",
        lambda t: t.strip(),
        "MirrorMaker 2's Kafka Connect group on the target, when MM2 runs on a Connect "
        "cluster; a takeover waits while it has members (unset: <source>-mm2, the group "
        "dedicated mode always uses).",
    ),
    SettingSpec(
        "errors.tolerance",
        "none",
        parse_choice(("none", "all")),
        "Mirrorline: `none` stops the flow on a record it cannot write; `all` skips it.",
    ),
    SettingSpec(
        "header.converter",
        BYTE_ARRAY_CONVERTER,
        parse_header_converter,
        "How headers become bytes after single message transforms, as in MM2: the byte "
        "array converter (headers must stay bytes) or SimpleHeaderConverter (every header "
        "as text, bytes in Base64).",
    ),
    SettingSpec(
        "errors.deadletterqueue.topic.name",
        "",
        parse_topic_name,
        "Mirrorline: with errors.tolerance=all, topic on the target for records not written.",
    ),
    SettingSpec(
        "errors.deadletterqueue.topic.replication.factor",
        "3",
        parse_replication_factor,
        "Replication factor of the dead-letter topic when Mirrorline creates it.",
    ),
    SettingSpec(
        "max.poll.records",
        "500",
        lambda t: parse_int(t, minimum=1),
        "Most records one poll of a source consumer hands out, as in Kafka's consumer "
        "(the writer's readers take at most 10000 a poll). It does not size micro-batches: "
        "see micro-batch.duration.ms.",
    ),
    SettingSpec(
        "micro-batch.duration.ms",
        "5000",
        lambda t: parse_int(t, minimum=100),
        "Mirrorline: how long a micro-batch aims to take on a backlog. Each batch reads "
        "what the flow moved per second in its last batch times this; longer batches "
        "spread each batch's fixed cost over more records, shorter ones save progress and "
        "offset syncs sooner and replay less after a crash.",
    ),
    SettingSpec(
        "micro-batch.max.records",
        "0",
        lambda t: parse_int(t, minimum=0),
        "Mirrorline: most source records one micro-batch reads, over all of the flow's "
        "partitions (a bound on what one crash re-copies in at-least-once mode); "
        "0: no bound but micro-batch.duration.ms.",
    ),
    SettingSpec(
        "data.path.mode",
        "micro-batch",
        parse_choice(("micro-batch", "real-time")),
        "Mirrorline: `real-time` writes each record as soon as it is read (Spark's real-time "
        "mode; at-least-once only, one task slot per source partition).",
    ),
    SettingSpec(
        "real-time.batch.ms",
        "1800000",
        lambda t: parse_int(t, minimum=5000),
        "Mirrorline: in real-time mode, how long each of Spark's batches lasts; every batch's "
        "end pauses the copying for a second or two, so the longer the better (at least 5000, "
        "Spark's minimum). Offset syncs and progress follow the tasks' reports, four a second, "
        "whatever the length.",
    ),
]

#: Every flow setting, by name.
FLOW_SETTINGS: dict[str, SettingSpec] = {spec.name: spec for spec in _SPECS}

#: Names MM2 used to accept, and the setting they stand for.
LEGACY_NAMES: dict[str, str] = {
    "topics.blacklist": "topics.exclude",
    "groups.blacklist": "groups.exclude",
    "config.properties.blacklist": "config.properties.exclude",
}

#: Control loops with an `<loop>.enabled` flag and an `<loop>.interval.seconds`.
INTERVAL_LOOPS: tuple[str, ...] = (
    "refresh.topics",
    "refresh.groups",
    "sync.topic.configs",
    "sync.topic.acls",
    "emit.checkpoints",
    "emit.heartbeats",
    "emit.metrics",
    "sync.group.offsets",
)
