"""What a flow's class settings name: Mirrorline's own code, or the file's Java classes.

`replication.policy.class`, `topic.filter.class`, `group.filter.class` and
`config.property.filter.class` name MirrorMaker 2's built-in classes (mapped
to Mirrorline's policies and list filters), a Python policy by import path, or
a Java class of the file's own. A name is a Java class when a jar of the
flow's `plugin.path` holds it; such a class is loaded and configured in the
Java plugin bridge (`mirrorline.java_bridge`) while the file loads, so that a
class that is missing, implements the wrong interface or throws in
`configure` is a configuration error naming the key, reported by
`mirrorline config check` with every other problem. As with client settings,
only what a flow uses is checked: every class of an enabled flow, the policy
of a flow that only emits heartbeats; the classes of other flows load when
first asked.

As MM2 does with a connector's properties, each class is configured with the
flow's settings as text, the flow's `replication.policy.*` lines, the keys
Mirrorline does not know written for the flow (`A->B.key`, a class's own
settings; MM2 passes no unknown global key), and `source.cluster.alias` /
`target.cluster.alias`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirrorline.config.errors import IssueLog
from mirrorline.config.model import Setting
from mirrorline.filters import ConfigPropertyFilter, GroupFilter, TopicFilter
from mirrorline.java_bridge import JavaCallError, JavaClassError, JavaObject, Kind, class_in_jars
from mirrorline.java_classes import (
    JavaConfigPropertyFilter,
    JavaGroupFilter,
    JavaReplicationPolicy,
    JavaTopicFilter,
)
from mirrorline.jvm import JvmSetupError

__all__ = ["ClassSettings"]

_INTERFACES: dict[str, str] = {
    "replication-policy": "org.apache.kafka.connect.mirror.ReplicationPolicy",
    "topic-filter": "org.apache.kafka.connect.mirror.TopicFilter",
    "group-filter": "org.apache.kafka.connect.mirror.GroupFilter",
    "config-property-filter": "org.apache.kafka.connect.mirror.ConfigPropertyFilter",
}
_DEFAULT_FILTERS: dict[str, tuple[Kind, str]] = {
    "topic.filter.class": ("topic-filter", "org.apache.kafka.connect.mirror.DefaultTopicFilter"),
    "group.filter.class": ("group-filter", "org.apache.kafka.connect.mirror.DefaultGroupFilter"),
    "config.property.filter.class": (
        "config-property-filter",
        "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
    ),
}


@dataclass(frozen=True)
class ClassSettings:
    """One flow's class settings, with the flow's settings every class is configured with."""

    settings: Mapping[str, Setting[Any]]
    configuration: Mapping[str, str]
    issues: IssueLog
    # Which classes are loaded now (the others on first use): those the flow uses,
    # as for its client roles. MM2 creates no class of a flow it does not run.
    check_policy: bool = True
    check_filters: bool = True

    @property
    def jars(self) -> tuple[Path, ...]:
        return tuple(self.settings["plugin.path"].value)

    @property
    def jars_shown(self) -> str:
        """The jars of `plugin.path` as a message shows them."""
        jars = self.jars
        if not jars:
            return "plugin.path is not set"
        more = f" and {len(jars) - 3} more" if len(jars) > 3 else ""
        return ", ".join(str(j) for j in jars[:3]) + more

    @property
    def _flow(self) -> str:
        source = self.configuration["source.cluster.alias"]
        return f"{source}->{self.configuration['target.cluster.alias']}"

    def is_java(self, key: str) -> bool:
        """True if `key` names a class that a jar of `plugin.path` holds."""
        return bool(self.jars) and class_in_jars(self.settings[key].value, self.jars)

    def java_policy(self) -> JavaReplicationPolicy | None:
        """The Java replication policy, or None (an error is noted) if it cannot serve."""
        java = self._load("replication.policy.class", "replication-policy", self.check_policy)
        return None if java is None else JavaReplicationPolicy(java)

    def topic_filter(self) -> TopicFilter:
        """MM2's default filter over `topics`/`topics.exclude`, or the Java class named."""
        java = self._java_filter("topic.filter.class", "topics, topics.exclude")
        if java is not None:
            return JavaTopicFilter(java=java)
        return TopicFilter(
            include=self.settings["topics"].value, exclude=self.settings["topics.exclude"].value
        )

    def group_filter(self) -> GroupFilter:
        """MM2's default filter over `groups`/`groups.exclude`, or the Java class named."""
        java = self._java_filter("group.filter.class", "groups, groups.exclude")
        if java is not None:
            return JavaGroupFilter(java=java)
        return GroupFilter(
            include=self.settings["groups"].value, exclude=self.settings["groups.exclude"].value
        )

    def config_property_filter(self) -> ConfigPropertyFilter:
        """MM2's default filter over `config.properties.exclude`, or the Java class named."""
        java = self._java_filter("config.property.filter.class", "config.properties.exclude")
        if java is not None:
            return JavaConfigPropertyFilter(java=java)
        return ConfigPropertyFilter(
            exclude=self.settings["config.properties.exclude"].value,
            use_defaults_from=self.settings["use.defaults.from"].value,
        )

    def _java_filter(self, key: str, lists: str) -> JavaObject | None:
        kind, default = _DEFAULT_FILTERS[key]
        if self.settings[key].value == default:
            return None
        if not self.is_java(key):
            setting = self.settings[key]
            self.issues.error(
                f"{setting.value} is in no jar of plugin.path ({self.jars_shown})",
                setting.origin,
                f"add the jar holding it to plugin.path, or use {lists} with {default}",
            )
            return None
        return self._load(key, kind, self.check_filters)

    def _load(self, key: str, kind: Kind, now: bool) -> JavaObject | None:
        setting = self.settings[key]
        java = JavaObject(kind, setting.value, self.jars, tuple(sorted(self.configuration.items())))
        if not now:
            return java
        try:
            java.load()
        except JavaClassError as exc:
            self.issues.error(str(exc), setting.origin, _fix(exc, kind, self._flow))
            return None
        except (JavaCallError, JvmSetupError) as exc:
            self.issues.error(f"cannot run the Java class {setting.value}: {exc}",
                              setting.origin)  # fmt: skip
            return None
        return java


def _fix(exc: JavaClassError, kind: Kind, flow: str) -> str:
    if exc.reason == "interface":
        return f"name a class that implements {_INTERFACES[kind]}"
    if exc.reason == "configure":
        return (
            "fix the settings the class reads (the message is the class's own); "
            f"write its own settings for the flow ({flow}.key), as MM2 passes it no "
            "unknown line of another level"
        )
    if exc.reason == "create":
        return "give the class a public constructor without arguments"
    return "put every jar the class needs on plugin.path"
