"""The effective configuration: clusters, flows and their settings, each traceable.

`load_config` (in `mirrorline.config.loader`) produces a `MirrorConfig`. Every
value in it is a `Setting`: the typed value, its text, and the `Origin` that
set it (`file:line` and key, or `default`). Later code asks for what it needs:

    config = load_config("mm2.properties")
    for flow in config.enabled_flows():
        flow.setting("offset.lag.max").value           # 100
        flow.topic_filter.matches("orders")            # True
        flow.client_settings("target", "producer")     # librdkafka settings
        flow.java_client_settings("source", "consumer")  # Java names, for Spark

Secrets stay readable to the code that needs them (`client_settings(...)`
returns the real values, ready for confluent-kafka), but every rendering of
the model (`str`, `repr`, `to_dict`) shows `[hidden]` instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Generic, Literal, TypeVar

from mirrorline.config.errors import ConfigError, ConfigIssue
from mirrorline.config.origin import Origin
from mirrorline.config.redact import REDACTED
from mirrorline.config.settings import INTERVAL_LOOPS
from mirrorline.config.start_position import StartPosition
from mirrorline.config.transforms import TransformChain
from mirrorline.filters import ConfigPropertyFilter, GroupFilter, TopicFilter
from mirrorline.policy import ReplicationPolicy, may_replicate

__all__ = [
    "CLIENT_TYPES",
    "SIDES",
    "ClientSettings",
    "ClientType",
    "ClusterConfig",
    "FlowConfig",
    "MirrorConfig",
    "Setting",
    "Side",
]

T = TypeVar("T")
Side = Literal["source", "target"]
ClientType = Literal["consumer", "producer", "admin"]
SIDES: tuple[Side, ...] = ("source", "target")
CLIENT_TYPES: tuple[ClientType, ...] = ("consumer", "producer", "admin")


@dataclass(frozen=True, repr=False)
class Setting(Generic[T]):
    """One effective value: typed `value`, its `text`, and where it came from."""

    name: str
    value: T
    text: str
    origin: Origin = field(default_factory=Origin.default)
    secret: bool = False

    @property
    def shown(self) -> str:
        """The text as it may be displayed: `[hidden]` for secrets."""
        return REDACTED if self.secret else self.text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, redacted."""
        return {
            "value": REDACTED if self.secret else _json_value(self.value),
            "origin": self.origin.where,
            "key": self.origin.key,
        }

    def __repr__(self) -> str:
        return f"Setting({self.name}={self.shown!r}, origin={str(self.origin)!r})"

    __str__ = __repr__


class ClientSettings(Mapping[str, str]):
    """The effective settings of one Kafka client, name to value.

    Reading it (`settings["bootstrap.servers"]`, `dict(settings)`) gives the
    real values, ready to pass to confluent-kafka. Printing it hides secrets;
    `setting(name)` tells where each value came from.
    """

    def __init__(self, settings: Mapping[str, Setting[str]]) -> None:
        self._settings = dict(sorted(settings.items()))

    def __getitem__(self, name: str) -> str:
        return self._settings[name].value

    def __iter__(self) -> Iterator[str]:
        return iter(self._settings)

    def __len__(self) -> int:
        return len(self._settings)

    def setting(self, name: str) -> Setting[str]:
        """The value of `name` with its origin."""
        return self._settings[name]

    def settings(self) -> tuple[Setting[str], ...]:
        """Every value with its origin, sorted by name."""
        return tuple(self._settings.values())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, redacted."""
        return {name: s.to_dict() for name, s in self._settings.items()}

    def __repr__(self) -> str:
        body = ", ".join(f"{n!r}: {s.shown!r}" for n, s in self._settings.items())
        return f"ClientSettings({{{body}}})"

    __str__ = __repr__


@dataclass(frozen=True, repr=False)
class ClusterConfig:
    """A cluster alias and how to reach it outside of any flow (tools, client library)."""

    alias: str
    clients: Mapping[ClientType, ClientSettings]
    client_issues: tuple[ConfigIssue, ...] = ()

    def client_settings(self, client: ClientType) -> ClientSettings:
        """librdkafka settings for a `consumer`, `producer` or `admin` client of this cluster.

        Raises `ConfigError` if they could not be translated (only possible for
        a cluster without bootstrap servers, which loading does not check).
        """
        if self.client_issues:
            raise ConfigError(self.client_issues)
        return self.clients[client]

    @property
    def bootstrap_servers(self) -> str | None:
        """The cluster's bootstrap servers, if configured."""
        return self.clients["admin"].get("bootstrap.servers")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, redacted."""
        if self.client_issues:
            return {}
        return {c: self.clients[c].to_dict() for c in CLIENT_TYPES}

    def __repr__(self) -> str:
        admin = self.clients["admin"]
        servers = admin.setting("bootstrap.servers").shown if "bootstrap.servers" in admin else None
        return f"ClusterConfig({self.alias!r}, bootstrap.servers={servers!r})"


@dataclass(frozen=True, repr=False)
class FlowConfig:
    """One replication flow `source->target` and all of its effective settings."""

    source: str
    target: str
    settings: Mapping[str, Setting[Any]]
    policy: ReplicationPolicy
    topic_filter: TopicFilter
    group_filter: GroupFilter
    config_property_filter: ConfigPropertyFilter
    start_position: StartPosition
    clients: Mapping[tuple[Side, ClientType], ClientSettings]
    java_clients: Mapping[tuple[Side, ClientType], ClientSettings]
    client_issues: tuple[ConfigIssue, ...] = ()
    # Single message transforms run on each record; empty: records copied as they are.
    transforms: TransformChain = field(default_factory=TransformChain)

    @property
    def name(self) -> str:
        """`source->target`."""
        return f"{self.source}->{self.target}"

    @property
    def enabled(self) -> bool:
        """Whether the flow replicates records."""
        return bool(self.settings["enabled"].value)

    def setting(self, name: str) -> Setting[Any]:
        """The effective value of a flow setting, with its origin."""
        try:
            return self.settings[name]
        except KeyError:
            raise KeyError(f"{name!r} is not a flow setting of Mirrorline") from None

    def value(self, name: str) -> Any:
        """The effective typed value of a flow setting."""
        return self.setting(name).value

    def interval(self, loop: str) -> timedelta | None:
        """How often a control loop runs, or None when its `<loop>.enabled` is false.

        `loop` is one of `refresh.topics`, `refresh.groups`, `sync.topic.configs`,
        `sync.topic.acls`, `emit.checkpoints`, `emit.heartbeats`, `sync.group.offsets`.
        """
        if loop not in INTERVAL_LOOPS:
            raise KeyError(f"{loop!r} is not a control loop; expected one of {INTERVAL_LOOPS}")
        if not self.value(f"{loop}.enabled"):
            return None
        return timedelta(seconds=self.value(f"{loop}.interval.seconds"))

    def client_settings(self, side: Side, client: ClientType) -> ClientSettings:
        """Effective librdkafka settings of one client role of this flow.

        `side` is the cluster the client talks to (`source` or `target`),
        `client` its type. The roles: source consumer (reads records), source
        admin, source producer (offset syncs), target producer (writes
        records and heartbeats), target admin, target consumer (reads
        internal topics). Raises `ConfigError` if this
        flow's clients could not be translated (only possible for flows that
        are neither enabled nor emitting heartbeats, which loading does not
        check).
        """
        if self.client_issues:
            raise ConfigError(self.client_issues)
        return self.clients[(side, client)]

    def java_client_settings(self, side: Side, client: ClientType) -> ClientSettings:
        """The same role's settings with Java client names, before translation.

        For Java clients, such as Spark's Kafka source (`kafka.`-prefixed
        options). librdkafka-only names are left out. Mirrorline's role
        defaults are included; a caller that hands these to Spark must drop
        the options Spark manages itself (`auto.offset.reset`,
        `enable.auto.commit`, serializers, interceptors).
        """
        if self.client_issues:
            raise ConfigError(self.client_issues)
        return self.java_clients[(side, client)]

    def remote_topic(self, topic: str) -> str:
        """The name of source topic `topic` on the target."""
        return self.policy.format_remote_topic(self.source, topic)

    def should_replicate_topic(self, topic: str) -> bool:
        """MM2's rule: selected (or a heartbeats topic), not internal, not a loop."""
        return may_replicate(
            self.policy,
            topic,
            target_alias=self.target,
            selected=self.topic_filter.matches(topic),
            heartbeats_replication=bool(self.value("heartbeats.replication.enabled")),
        )

    def should_replicate_group(self, group: str) -> bool:
        """Whether checkpoints are emitted for consumer group `group`."""
        return self.group_filter.matches(group)

    @property
    def offset_syncs_cluster(self) -> str:
        """The alias of the cluster that holds this flow's offset-syncs topic."""
        return self.source if self.value("offset-syncs.topic.location") == "source" else self.target

    @property
    def offset_syncs_topic(self) -> str:
        """The offset-syncs topic name; it carries the alias of the *other* cluster."""
        other = self.target if self.offset_syncs_cluster == self.source else self.source
        return self.policy.offset_syncs_topic(other)

    @property
    def checkpoints_topic(self) -> str:
        """The checkpoints topic on the target."""
        return self.policy.checkpoints_topic(self.source)

    @property
    def heartbeats_topic(self) -> str:
        """The heartbeats topic on the target."""
        return self.policy.heartbeats_topic()

    def to_dict(self) -> dict[str, Any]:
        """A stable JSON-ready form, redacted."""
        clients: dict[str, Any] = {}
        if not self.client_issues:
            clients = {f"{s}.{c}": cs.to_dict() for (s, c), cs in self.clients.items()}
        return {
            "name": self.name,
            "source": self.source,
            "target": self.target,
            "enabled": self.enabled,
            "settings": {name: s.to_dict() for name, s in sorted(self.settings.items())},
            "clients": clients,
        }

    def __repr__(self) -> str:
        state = "enabled" if self.enabled else "disabled"
        return f"FlowConfig({self.name}, {state}, policy={type(self.policy).__name__})"


@dataclass(frozen=True, repr=False)
class MirrorConfig:
    """A loaded configuration: its clusters, every possible flow, and warnings."""

    file: str
    clusters: Mapping[str, ClusterConfig]
    flows: tuple[FlowConfig, ...]
    warnings: tuple[ConfigIssue, ...] = ()
    # The service's settings that the file sets (`config.service_settings`), by name.
    service: Mapping[str, Setting[Any]] = field(default_factory=dict)

    def flow(self, source: str, target: str) -> FlowConfig:
        """The flow `source->target` (enabled or not)."""
        for flow in self.flows:
            if flow.source == source and flow.target == target:
                return flow
        raise KeyError(f"no flow {source}->{target}: both aliases must be listed in clusters")

    def enabled_flows(self) -> tuple[FlowConfig, ...]:
        """Flows that replicate records (`A->B.enabled = true`)."""
        return tuple(f for f in self.flows if f.enabled)

    def heartbeat_flows(self) -> tuple[FlowConfig, ...]:
        """Flows that emit heartbeats into their target, enabled or not.

        As in MM2, heartbeats go to every pair whose `emit.heartbeats.enabled`
        is true (the default), so that a flow B->A's heartbeats reach A and are
        replicated back as `A.heartbeats`. Pairs whose target has no
        bootstrap servers are left out (with a warning at load time).
        """
        return tuple(
            f
            for f in self.flows
            if f.value("emit.heartbeats.enabled")
            and self.clusters[f.target].bootstrap_servers is not None
        )

    def to_dict(self) -> dict[str, Any]:
        """A stable JSON-ready form, redacted."""
        return {
            "file": self.file,
            "clusters": {alias: cluster.to_dict() for alias, cluster in self.clusters.items()},
            "flows": [f.to_dict() for f in self.flows],
            "service": {name: s.to_dict() for name, s in sorted(self.service.items())},
            "warnings": [w.to_dict() for w in self.warnings],
        }

    def __repr__(self) -> str:
        enabled = ", ".join(f.name for f in self.enabled_flows()) or "none"
        return (
            f"MirrorConfig({self.file!r}, clusters={list(self.clusters)}, enabled flows: {enabled})"
        )


def _json_value(value: Any) -> Any:
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, tuple | list):
        return [_json_value(v) for v in value]
    return str(value)
