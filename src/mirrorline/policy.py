"""Replication policies: how remote topics are named and how their origin is read back.

A policy answers two kinds of questions. Forwards: what is topic `orders`
from cluster `us-west` called on the target (`us-west.orders`)? Backwards:
given a topic name, which cluster did it come from, what was it called there,
and what is the original topic after several hops? The backwards answers are
what lets Mirrorline refuse to replicate a topic into a cluster it already
passed through (see `is_cycle` and `may_replicate`).

The names of the internal topics (`heartbeats`,
`mm2-offset-syncs.<alias>.internal`, `<alias>.checkpoints.internal`) also
come from the policy, and match MirrorMaker 2's, so MM2's tools and Kafka's
`RemoteClusterUtils` read Mirrorline's topics unchanged.

Two policies are built in:

* `DefaultReplicationPolicy` prefixes the source alias and a separator:
  `topic1` from `us-west` is `us-west.topic1`, and after a second hop
  `us-east.us-west.topic1`. Loops are visible in the name.
* `IdentityReplicationPolicy` keeps names (aggregation, migration, MM1-style
  mirroring). A name then says nothing about where a record came from, so
  loops cannot be seen from names: `is_cycle` never reports one for ordinary
  topics, and the engine must rely on provenance headers carried by each
  record (origin cluster and topic) to avoid writing a record back where it
  came from. Heartbeats keep the prefixed form under both policies, so
  heartbeat loops are detected in both.
* `RenameFormatPolicy` names remote topics with Confluent Replicator's
  `topic.rename.format` template (`${topic}.replica`). The template names no
  cluster, so names cannot show where a topic came from either; its records
  carry provenance too, with the stricter rule that a record never returns to
  a cluster it has been in, whatever the topic: with a rename in both
  directions, `orders` on A would otherwise come back as `orders.replica.replica`.

A custom policy is either an MM2 file's own Java class or Python code.
A Java class (`com.example.MyPolicy`, implementing MM2's `ReplicationPolicy`)
is found in the jars of the flow's `plugin.path`; it is created and configured
with the flow's settings in Mirrorline's plugin bridge JVM, and
`java_classes.JavaReplicationPolicy` asks it every question above, each once
per process (`java_bridge`). Python code is a subclass of `ReplicationPolicy`
named by import path (`package.module:ClassName`); it receives the flow's
settings through `from_settings`. `config.plugin_classes` decides which.
"""

from __future__ import annotations

import importlib
import inspect
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar, Self

__all__ = [
    "DefaultReplicationPolicy",
    "IdentityReplicationPolicy",
    "PolicyClassError",
    "RenameFormatPolicy",
    "ReplicationPolicy",
    "is_cycle",
    "may_replicate",
    "policy_class",
]

HEARTBEATS_TOPIC = "heartbeats"
_TOPIC_PLACEHOLDER = "${topic}"
_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]+")
_TRUE_FALSE = {"true": True, "false": False}


class ReplicationPolicy(ABC):
    """The naming rules for remote and internal topics (MM2's `ReplicationPolicy`).

    Subclasses implement the three abstract methods; the internal topic names
    and the `is_*` checks have MM2's defaults.
    """

    #: False for policies whose remote topic names do not show where a topic came from.
    detects_cycles_by_name: ClassVar[bool] = True
    #: For those: True if a record may not return to a cluster it has been in under any
    #: topic name (False: not under the name it had there).
    provenance_by_cluster: ClassVar[bool] = False

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> Self:
        """Build the policy for one flow.

        `settings` holds the flow's effective settings as text, including
        `replication.policy.separator`, `source.cluster.alias` and
        `target.cluster.alias`. The default ignores them; override to read
        your own (any `replication.policy.*` key is passed through untouched).
        """
        return cls()

    @abstractmethod
    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """The name on the target of `topic` replicated from cluster `source_alias`."""

    @abstractmethod
    def topic_source(self, topic: str) -> str | None:
        """The alias of the cluster `topic` was replicated from, or None for a local topic."""

    @abstractmethod
    def upstream_topic(self, topic: str) -> str | None:
        """The name `topic` had on the cluster it was replicated from, or None for a local topic."""

    def original_topic(self, topic: str) -> str:
        """The name of the topic where it was first written, before any hop."""
        seen = {topic}
        while True:
            upstream = self.upstream_topic(topic)
            if upstream is None or upstream in seen:
                return topic
            seen.add(upstream)
            topic = upstream

    def heartbeats_topic(self) -> str:
        """The name of the heartbeats topic on every cluster."""
        return HEARTBEATS_TOPIC

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """The offset-syncs topic for flows whose other end is `cluster_alias`."""
        return f"mm2-offset-syncs.{cluster_alias}.internal"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """The checkpoints topic (on a target) for groups of source cluster `cluster_alias`."""
        return f"{cluster_alias}.checkpoints.internal"

    def is_heartbeats_topic(self, topic: str) -> bool:
        """True for `heartbeats` and its remote copies (`us-west.heartbeats`, ...)."""
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_checkpoints_topic(self, topic: str) -> bool:
        """True for a checkpoints topic."""
        return topic.endswith(".checkpoints.internal")

    def is_mirror_internal_topic(self, topic: str) -> bool:
        """True for MirrorMaker 2's (and Mirrorline's) own internal topics."""
        return topic.endswith(".internal")

    def is_internal_topic(self, topic: str) -> bool:
        """True for topics that are never replicated: Kafka's, Connect's and MM2's own."""
        kafka_internal = topic.startswith("__") or topic.startswith(".")
        connect_internal = topic.endswith("-internal") or topic.endswith(".internal")
        return self.is_mirror_internal_topic(topic) or kafka_internal or connect_internal


@dataclass(frozen=True)
class DefaultReplicationPolicy(ReplicationPolicy):
    """Prefix remote topics with `<source alias><separator>` (MM2's default policy).

    `internal_topic_separator_enabled=False` keeps `.` in internal topic names
    even with a custom separator, as MM2 does for deployments created before
    custom separators applied to internal topics.
    """

    separator: str = "."
    internal_topic_separator_enabled: bool = True

    def __post_init__(self) -> None:
        if not self.separator or not _TOPIC_CHARS.fullmatch(self.separator):
            raise ValueError(
                "the separator must be one or more characters allowed in topic names "
                "(letters, digits, '.', '_', '-')"
            )

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> Self:
        separator = settings.get("replication.policy.separator", ".")
        enabled = settings.get("replication.policy.internal.topic.separator.enabled", "true")
        return cls(
            separator=separator,
            internal_topic_separator_enabled=_TRUE_FALSE.get(enabled.strip().lower(), True),
        )

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        parts = self._split(topic)
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self.separator) :]

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        sep = self._internal_separator
        return f"mm2-offset-syncs{sep}{cluster_alias}{sep}internal"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return f"{cluster_alias}{self._checkpoints_suffix}"

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(self._checkpoints_suffix)

    def is_mirror_internal_topic(self, topic: str) -> bool:
        return topic.endswith(f"{self._internal_separator}internal")

    @property
    def _internal_separator(self) -> str:
        return self.separator if self.internal_topic_separator_enabled else "."

    @property
    def _checkpoints_suffix(self) -> str:
        sep = self._internal_separator
        return f"{sep}checkpoints{sep}internal"

    def _split(self, topic: str) -> list[str]:
        # Same pieces as Java's String.split: trailing empty pieces are dropped,
        # so "a." and "a.." are local topics while ".a" comes from alias "".
        parts = topic.split(self.separator)
        while len(parts) > 1 and parts[-1] == "":
            parts.pop()
        return parts


@dataclass(frozen=True)
class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Keep topic names unchanged (MM2's `IdentityReplicationPolicy`).

    Only heartbeats are still prefixed, so heartbeat loops stay visible. Any
    other topic may or may not be remote, and its origin is unknown: its
    upstream name is itself, and its source is `source_cluster_alias` when
    the policy belongs to a flow (None otherwise).
    """

    source_cluster_alias: str | None = None
    detects_cycles_by_name: ClassVar[bool] = False

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> Self:
        base = DefaultReplicationPolicy.from_settings(settings)
        return cls(
            separator=base.separator,
            internal_topic_separator_enabled=base.internal_topic_separator_enabled,
            source_cluster_alias=settings.get("source.cluster.alias"),
        )

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self._looks_like_heartbeats(topic):
            return super().format_remote_topic(source_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeats(topic):
            return super().topic_source(topic)
        return self.source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeats(topic):
            return super().upstream_topic(topic)
        return topic

    def _looks_like_heartbeats(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic())


@dataclass(frozen=True)
class RenameFormatPolicy(IdentityReplicationPolicy):
    """Name remote topics by a template of Confluent Replicator's `topic.rename.format`.

    `${topic}` stands for the source topic: `${topic}.replica` makes `orders`
    `orders.replica`. As under the identity policy, whose rules it shares,
    heartbeats keep the prefixed form (their loops stay visible) and a name
    matching the template came from `source_cluster_alias` when the policy
    belongs to a flow; loops are caught by provenance (see the module).
    """

    template: str = "${topic}"
    provenance_by_cluster: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        parts = self.template.split(_TOPIC_PLACEHOLDER)
        if len(parts) != 2:
            raise ValueError(f"the template must hold {_TOPIC_PLACEHOLDER} exactly once")
        if any(p and not _TOPIC_CHARS.fullmatch(p) for p in parts):
            raise ValueError(
                f"around {_TOPIC_PLACEHOLDER} only characters allowed in topic names "
                "(letters, digits, '.', '_', '-')"
            )

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> Self:
        template = settings.get("topic.rename.format", "").strip() or _TOPIC_PLACEHOLDER
        return replace(super().from_settings(settings), template=template)

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self._looks_like_heartbeats(topic):
            return super().format_remote_topic(source_alias, topic)
        return self.template.replace(_TOPIC_PLACEHOLDER, topic)

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeats(topic) or self._renamed_from(topic) is not None:
            return super().topic_source(topic)
        return None

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeats(topic):
            return super().upstream_topic(topic)
        return self._renamed_from(topic)

    def _renamed_from(self, topic: str) -> str | None:
        prefix, suffix = self.template.split(_TOPIC_PLACEHOLDER)
        inner = len(topic) - len(prefix) - len(suffix)
        if inner > 0 and topic.startswith(prefix) and topic.endswith(suffix):
            return topic[len(prefix) : len(topic) - len(suffix)]
        return None


def is_cycle(policy: ReplicationPolicy, topic: str, target_alias: str) -> bool:
    """True if `topic`'s name shows that it already passed through `target_alias`.

    Walks the chain of upstream names (`a.b.t` came from `a`, which got it
    from `b`). A policy whose names carry no history (identity) never
    reports a cycle here; see the module documentation.
    """
    seen: set[str] = set()
    while topic not in seen:
        seen.add(topic)
        source = policy.topic_source(topic)
        if source is None:
            return False
        if source == target_alias:
            return True
        upstream = policy.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return False
        topic = upstream
    return False


def may_replicate(
    policy: ReplicationPolicy,
    topic: str,
    *,
    target_alias: str,
    selected: bool,
    heartbeats_replication: bool = True,
) -> bool:
    """Whether `topic`, read from a flow's source, may be written to cluster `target_alias`.

    `selected` is the flow's topic filter verdict. As in MM2, heartbeats
    topics are replicated even when the filter leaves them out (unless
    `heartbeats.replication.enabled=false`), internal topics never are, and
    nothing is replicated into a cluster its name shows it came from. The
    target's own heartbeats come back as `<target>.heartbeats` and are
    refused by that last rule.
    """
    wanted = selected or (heartbeats_replication and policy.is_heartbeats_topic(topic))
    if not wanted or policy.is_internal_topic(topic):
        return False
    return not is_cycle(policy, topic, target_alias)


class PolicyClassError(ValueError):
    """`replication.policy.class` names nothing Mirrorline can use."""


def policy_class(name: str) -> type[ReplicationPolicy]:
    """The Python policy class named in `replication.policy.class`.

    MM2's Java class names map to the built-in policies; anything else is a
    Python import path, `package.module:ClassName` (or `package.module.ClassName`).
    A Java class of the file's own is not looked up here: see the module.
    """
    name = name.strip()
    builtin = _BUILTIN_POLICIES.get(name)
    if builtin is not None:
        return builtin
    if ":" in name:
        module_name, _, class_name = name.partition(":")
    else:
        module_name, _, class_name = name.rpartition(".")
    if not module_name or not class_name:
        raise PolicyClassError(f"{name!r} is not an import path (package.module:ClassName)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PolicyClassError(f"cannot import module {module_name!r}: {exc}") from None
    found = getattr(module, class_name, None)
    if not (isinstance(found, type) and issubclass(found, ReplicationPolicy)):
        raise PolicyClassError(
            f"{class_name!r} in module {module_name!r} is not a ReplicationPolicy subclass"
        )
    if inspect.isabstract(found):
        raise PolicyClassError(f"{name!r} does not implement every abstract method")
    return found


_BUILTIN_POLICIES: dict[str, type[ReplicationPolicy]] = {
    "org.apache.kafka.connect.mirror.DefaultReplicationPolicy": DefaultReplicationPolicy,
    "org.apache.kafka.connect.mirror.IdentityReplicationPolicy": IdentityReplicationPolicy,
    "DefaultReplicationPolicy": DefaultReplicationPolicy,
    "IdentityReplicationPolicy": IdentityReplicationPolicy,
    "RenameFormatPolicy": RenameFormatPolicy,
}
