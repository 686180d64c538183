"""A file's own Java policy and filters, as Mirrorline's policy and filter types.

Each type here answers what its Python counterpart answers by asking the Java
object (`java_bridge.JavaObject`, answers kept per process), so every part of
Mirrorline that takes a `ReplicationPolicy`, `TopicFilter`, `GroupFilter` or
`ConfigPropertyFilter` works with a Java class unchanged.

The topic and group filters keep the run-time allow and deny lists
(`mirrorline topics` / `groups`, see `control.flow_control`): with a Java filter
the file's lists are empty (MM2 hands `topics` and `groups` to the class, which
decides), and the entries added at run time decide before the class does: a
name denied or matching an added exclude entry is never replicated, one allowed
or matching an added include entry always is, any other name is the class's
call.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import ClassVar

from mirrorline.filters import ConfigPropertyFilter, GroupFilter, NameFilter, TopicFilter
from mirrorline.java_bridge import JavaCallError, JavaObject
from mirrorline.policy import ReplicationPolicy

__all__ = [
    "JavaConfigPropertyFilter",
    "JavaGroupFilter",
    "JavaReplicationPolicy",
    "JavaTopicFilter",
    "is_java",
    "shown_class",
]


@dataclass(frozen=True)
class JavaReplicationPolicy(ReplicationPolicy):
    """MM2's `ReplicationPolicy` implemented by a Java class.

    Its names show where a topic came from only if the class's `topicSource`
    says so: as in MM2, loops are detected from what it answers.
    """

    java: JavaObject

    def __repr__(self) -> str:
        # The same for every flow naming the same class with the same replication.policy.*
        # settings (`client.policy_of_cluster` compares policies by their repr); their
        # values only as a digest, since any may be a secret.
        own = [(k, v) for k, v in self.java.settings if k.startswith("replication.policy.")]
        digest = hashlib.sha256(repr(own).encode()).hexdigest()[:12]
        return f"JavaReplicationPolicy({self.java.class_name}, settings {digest})"

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return self._name("formatRemoteTopic", source_alias, topic)

    def topic_source(self, topic: str) -> str | None:
        return self.java.call("topicSource", topic)

    def upstream_topic(self, topic: str) -> str | None:
        return self.java.call("upstreamTopic", topic)

    def original_topic(self, topic: str) -> str:
        return self._name("originalTopic", topic)

    def heartbeats_topic(self) -> str:
        return self._name("heartbeatsTopic")

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return self._name("offsetSyncsTopic", cluster_alias)

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return self._name("checkpointsTopic", cluster_alias)

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.java.test("isHeartbeatsTopic", topic)

    def is_checkpoints_topic(self, topic: str) -> bool:
        return self.java.test("isCheckpointsTopic", topic)

    def is_mirror_internal_topic(self, topic: str) -> bool:
        return self.java.test("isMM2InternalTopic", topic)

    def is_internal_topic(self, topic: str) -> bool:
        return self.java.test("isInternalTopic", topic)

    def _name(self, method: str, *args: str) -> str:
        name = self.java.call(method, *args)
        if not name:
            raise JavaCallError(
                f"{self.java.class_name}.{method}({', '.join(args)}) returned no topic name"
            )
        return name


@dataclass(frozen=True)
class _JavaNameFilter(NameFilter):
    """A name filter whose class decides, under the run-time lists (see the module).

    `include` and `exclude` hold only entries added at run time.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    java: JavaObject = field(kw_only=True)
    #: The interface's method that decides.
    question: ClassVar[str] = ""

    def matches(self, name: str) -> bool:
        listed = self.listed(name)
        if listed is not None:
            return listed
        return self.java.test(self.question, name)

    def java_pattern(self) -> str:
        raise TypeError(
            f"the filter {self.java.class_name} is Java code, not a pattern: "
            "use the names it selects"
        )


@dataclass(frozen=True)
class JavaTopicFilter(_JavaNameFilter, TopicFilter):
    """MM2's `TopicFilter` implemented by a Java class, under the run-time lists."""

    question: ClassVar[str] = "shouldReplicateTopic"


@dataclass(frozen=True)
class JavaGroupFilter(_JavaNameFilter, GroupFilter):
    """MM2's `GroupFilter` implemented by a Java class, under the run-time lists."""

    question: ClassVar[str] = "shouldReplicateGroup"


@dataclass(frozen=True)
class JavaConfigPropertyFilter(ConfigPropertyFilter):
    """MM2's `ConfigPropertyFilter` implemented by a Java class."""

    exclude: tuple[str, ...] = ()
    java: JavaObject = field(kw_only=True)

    def should_replicate(self, prop: str) -> bool:
        return self.java.test("shouldReplicateConfigProperty", prop)

    def should_replicate_source_default(self, prop: str) -> bool:
        # As the Python filter: a source default is copied only if the property is.
        return self.should_replicate(prop) and self.java.test("shouldReplicateSourceDefault", prop)


def is_java(thing: object) -> bool:
    """True for a policy or filter backed by a Java class."""
    return isinstance(
        thing, JavaReplicationPolicy | JavaTopicFilter | JavaGroupFilter | JavaConfigPropertyFilter
    )


def shown_class(thing: object) -> str:
    """The class as people know it: the Java class's name, else the Python type's."""
    java = getattr(thing, "java", None)
    return (
        java.class_name if is_java(thing) and isinstance(java, JavaObject) else type(thing).__name__
    )
