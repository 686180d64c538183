"""Loading an MM2 properties file into a checked `MirrorConfig`.

The loader reads every line, resolves provider placeholders, places each key
(`precedence.classify`), checks each value once, then builds every flow and
client role by ranking the candidates. It never stops at the first problem:
all errors are gathered and raised together in one `ConfigError`, so
`mirrorline config check` can show them all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirrorline.config.clients import (
    JAVA_CLIENT_SETTINGS,
    client_types,
    forced_settings,
    java_only,
    role_defaults,
    translate,
)
from mirrorline.config.errors import ConfigError, ConfigIssue, unique_issues
from mirrorline.config.model import (
    CLIENT_TYPES,
    SIDES,
    ClientSettings,
    ClientType,
    ClusterConfig,
    FlowConfig,
    MirrorConfig,
    Setting,
    Side,
)
from mirrorline.config.origin import Origin
from mirrorline.config.precedence import ClientSelector, KeyProblem, Level, Placement, classify
from mirrorline.config.properties import Property, parse_properties, read_properties
from mirrorline.config.providers import ProviderContext, resolve_placeholders
from mirrorline.config.redact import is_secret_key, shown
from mirrorline.config.service_settings import SERVICE_SETTINGS
from mirrorline.config.settings import FLOW_SETTINGS, converter_problem
from mirrorline.config.start_position import StartPosition, parse_start_position
from mirrorline.config.values import parse_list
from mirrorline.filters import ConfigPropertyFilter, GroupFilter, TopicFilter
from mirrorline.policy import (
    DefaultReplicationPolicy,
    PolicyClassError,
    RenameFormatPolicy,
    ReplicationPolicy,
)
from mirrorline.policy import policy_class as find_policy_class

__all__ = ["load_config", "parse_config"]

_ALIAS = re.compile(r"[a-zA-Z0-9._-]+")
_RESERVED_ALIASES = ("workers", "connectors", "consumer", "producer", "admin")
_Role = tuple[Side, ClientType]
_Rank = tuple[int, int, int]


def load_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> MirrorConfig:
    """Load and check an MM2 properties file.

    `environ` replaces `os.environ` for `${env:...}` placeholders (tests,
    embedding). Relative `${file:...}` paths are read from the file's
    directory. Raises `ConfigError` listing every problem found.
    """
    file = Path(path)
    issues: list[ConfigIssue] = []
    properties = read_properties(file, issues)
    context = ProviderContext(
        environ=dict(os.environ) if environ is None else environ, base_dir=file.parent
    )
    return _Loader(str(file), properties, context, errors=issues).load()


def parse_config(
    text: str,
    *,
    source: str = "<text>",
    base_dir: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> MirrorConfig:
    """Like `load_config`, for properties text; `source` names it in messages."""
    issues: list[ConfigIssue] = []
    properties = parse_properties(text, source=source, issues=issues)
    context = ProviderContext(
        environ=dict(os.environ) if environ is None else environ,
        base_dir=Path(base_dir) if base_dir is not None else Path.cwd(),
    )
    return _Loader(source, properties, context, errors=issues).load()


@dataclass
class _Entry:
    """One line of the file, resolved, placed and (for flow settings) parsed."""

    key: str
    text: str
    origin: Origin
    secret: bool
    index: int
    placement: Placement
    parsed: Any = None
    valid: bool = True


@dataclass
class _Loader:
    file: str
    properties: list[Property]
    context: ProviderContext
    errors: list[ConfigIssue] = field(default_factory=list)
    warnings: list[ConfigIssue] = field(default_factory=list)
    entries: list[_Entry] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    unresolved: set[str] = field(default_factory=set)
    service: dict[str, Setting[Any]] = field(default_factory=dict)

    def load(self) -> MirrorConfig:
        resolved = self._resolve(self._latest(self.properties))
        self.aliases = self._read_clusters(resolved)
        config: MirrorConfig | None = None
        if self.aliases:
            for index, (prop, text, secret) in enumerate(resolved):
                self._place(index, prop, text, secret)
            config = self._build()
        if self.errors or config is None:
            raise ConfigError(self.errors)
        return config

    # -- reading lines -------------------------------------------------------------

    def _latest(self, properties: list[Property]) -> list[Property]:
        """Keep the last occurrence of each key, as Java does, and say so."""
        last: dict[str, Property] = {}
        for prop in properties:
            earlier = last.get(prop.key)
            if earlier is not None:
                self.warnings.append(
                    ConfigIssue(
                        f"set again on line {prop.origin.line}; the later line wins",
                        earlier.origin,
                        "remove one of the two lines",
                        severity="warning",
                    )
                )
            last[prop.key] = prop
        keep = {id(p) for p in last.values()}
        return [p for p in properties if id(p) in keep]

    def _resolve(self, properties: list[Property]) -> list[tuple[Property, str, bool]]:
        result = []
        for prop in properties:
            before = len(self.errors)
            text, used = resolve_placeholders(prop.value, prop.origin, self.context, self.errors)
            if len(self.errors) == before:
                result.append((prop, text, used or is_secret_key(prop.key)))
            else:
                self.unresolved.add(prop.key)
        return result

    def _read_clusters(self, resolved: list[tuple[Property, str, bool]]) -> list[str]:
        found = [(p, text) for p, text, _ in resolved if p.key == "clusters"]
        if not found and "clusters" in self.unresolved:
            return []
        if not found:
            self._error(
                "clusters is not set",
                Origin(self.file, None, "clusters"),
                "list the cluster aliases, e.g. `clusters = us-east, us-west`",
            )
            return []
        prop, text = found[0]
        aliases: list[str] = []
        for alias in parse_list(text):
            problem = _alias_problem(alias)
            if problem:
                self._error(problem, prop.origin, "aliases use letters, digits, '.', '_', '-'")
            elif alias in aliases:
                self._error(f"alias {alias!r} is listed twice", prop.origin, "list it once")
            else:
                aliases.append(alias)
        if not parse_list(text):
            self._error("clusters is empty", prop.origin, "list at least two cluster aliases")
        return aliases

    def _place(self, index: int, prop: Property, text: str, secret: bool) -> None:
        placed = classify(prop.key, self.aliases)
        if isinstance(placed, KeyProblem):
            self._error(placed.message, prop.origin, placed.hint)
            return
        entry = _Entry(prop.key, text, prop.origin, secret, index, placed)
        refused = converter_problem(placed.name, text) if placed.kind == "ignored" else None
        if refused is not None:
            self._error(refused[0], prop.origin, refused[1])
            return
        if placed.kind == "ignored":
            self._warn(f"ignored: {placed.note}", prop.origin)
            return
        if placed.kind == "service":
            self._parse_service_value(entry)
            return
        if placed.kind == "flow":
            self._parse_flow_value(entry)
        if placed.kind == "client":
            self._check_client_entry(entry)
        if placed.legacy:
            self._warn(
                f"old name of {placed.name}; it still works",
                prop.origin,
                f"rename it {placed.name}",
            )
        self.entries.append(entry)

    def _parse_flow_value(self, entry: _Entry) -> None:
        spec = FLOW_SETTINGS[entry.placement.name]
        try:
            entry.parsed = spec.parse(entry.text)
        except ValueError as exc:
            entry.valid = False
            hint = None
            if spec.name.endswith(".interval.seconds"):
                loop = spec.name.removesuffix(".interval.seconds")
                hint = f"to stop this loop, set {loop}.enabled = false"
            self._error(
                f"invalid value {shown(entry.text, secret=entry.secret)}: {exc}", entry.origin, hint
            )

    def _parse_service_value(self, entry: _Entry) -> None:
        spec = SERVICE_SETTINGS[entry.key]
        try:
            value = spec.parse(entry.text)
        except ValueError as exc:
            shown_text = shown(entry.text, secret=entry.secret)
            self._error(f"invalid value {shown_text}: {exc}", entry.origin)
            return
        named = value if isinstance(value, tuple) and entry.key.endswith(".clusters") else ()
        for alias in named:
            if alias not in self.aliases:
                self._error(
                    f"{alias!r} is not a cluster alias listed in clusters",
                    entry.origin,
                    f"known aliases: {', '.join(self.aliases)}",
                )
        self.service[entry.key] = Setting(
            entry.key, value, entry.text.strip(), entry.origin, entry.secret
        )

    def _check_client_entry(self, entry: _Entry) -> None:
        name = entry.placement.name
        if entry.placement.note:
            self._warn(f"ignored: {entry.placement.note}", entry.origin)
        rule = java_only(name)
        if rule is None:
            return
        entry.valid = False
        if rule.action == "refused":
            self._error(f"{name} cannot be used with librdkafka: {rule.reason}", entry.origin)
        else:
            self._warn(f"ignored: {rule.reason}", entry.origin)

    # -- building flows ------------------------------------------------------------

    def _build(self) -> MirrorConfig:
        clusters = {alias: self._cluster(alias) for alias in self.aliases}
        flows = tuple(
            self._flow(source, target, clusters)
            for source in self.aliases
            for target in self.aliases
            if source != target
        )
        self._check_reachability(flows, clusters)
        return MirrorConfig(
            self.file, clusters, flows, tuple(unique_issues(self.warnings)), self.service
        )

    def _flow(self, source: str, target: str, clusters: dict[str, ClusterConfig]) -> FlowConfig:
        ranked = {name: self._flow_setting(name, source, target) for name in FLOW_SETTINGS}
        settings = {name: setting for name, (_, setting) in ranked.items()}
        enabled = bool(settings["enabled"].value)
        checked: set[_Role] = set()
        if enabled:
            checked = {(s, c) for s in SIDES for c in CLIENT_TYPES}
        elif settings["emit.heartbeats.enabled"].value and clusters[target].bootstrap_servers:
            checked = {("target", "producer"), ("target", "admin")}
        clients, java_clients, unchecked = self._flow_clients(source, target, checked)
        settings["start.position"] = self._start_position(settings, java_clients)
        settings["max.poll.records"] = self._max_poll_records(
            ranked["max.poll.records"], source, target
        )
        if enabled:
            self._check_bootstrap(source, target, settings["enabled"], java_clients)
        self._check_dead_letters(settings)
        self._check_real_time(settings, f"{source}->{target}")
        extras = self._policy_extras(source, target)
        policy = self._policy(settings, extras, source, target)
        return FlowConfig(
            source=source,
            target=target,
            settings={**settings, **extras},
            policy=policy,
            topic_filter=TopicFilter(
                include=settings["topics"].value, exclude=settings["topics.exclude"].value
            ),
            group_filter=GroupFilter(
                include=settings["groups"].value, exclude=settings["groups.exclude"].value
            ),
            config_property_filter=ConfigPropertyFilter(
                exclude=settings["config.properties.exclude"].value,
                use_defaults_from=settings["use.defaults.from"].value,
            ),
            start_position=settings["start.position"].value,
            clients=clients,
            java_clients=java_clients,
            client_issues=unchecked,
        )

    def _flow_setting(self, name: str, source: str, target: str) -> tuple[_Rank, Setting[Any]]:
        """The winning line for a flow setting (or its default), with its rank."""
        best: tuple[_Rank, _Entry] | None = None
        for entry in self.entries:
            placement = entry.placement
            if placement.kind != "flow" or placement.name != name or not entry.valid:
                continue
            if not _flow_scope_matches(placement, source, target):
                continue
            rank = (int(placement.level), 0 if placement.legacy else 1, entry.index)
            if best is None or rank > best[0]:
                best = (rank, entry)
        if best is None:
            spec = FLOW_SETTINGS[name]
            return (0, 0, 0), Setting(name, spec.parse(spec.default), spec.default)
        rank, entry = best
        return rank, Setting(name, entry.parsed, entry.text.strip(), entry.origin, entry.secret)

    def _policy_extras(self, source: str, target: str) -> dict[str, Setting[Any]]:
        winners: dict[str, tuple[_Rank, _Entry]] = {}
        for entry in self.entries:
            placement = entry.placement
            if placement.kind != "policy" or not _flow_scope_matches(placement, source, target):
                continue
            rank = (int(placement.level), 1, entry.index)
            if placement.name not in winners or rank > winners[placement.name][0]:
                winners[placement.name] = (rank, entry)
        return {
            name: Setting(name, e.text.strip(), e.text.strip(), e.origin, e.secret)
            for name, (_, e) in winners.items()
        }

    def _policy(
        self,
        settings: dict[str, Setting[Any]],
        extras: dict[str, Setting[Any]],
        source: str,
        target: str,
    ) -> ReplicationPolicy:
        chosen = settings["replication.policy.class"]
        rename = settings["topic.rename.format"]
        texts = {name: s.text for name, s in {**settings, **extras}.items()}
        texts["source.cluster.alias"] = source
        texts["target.cluster.alias"] = target
        if rename.value:
            if not chosen.origin.is_default:
                self._error(
                    "topic.rename.format and replication.policy.class both choose how remote "
                    "topics are named",
                    rename.origin,
                    f"keep one of them (replication.policy.class is set at {chosen.origin})",
                )
                return DefaultReplicationPolicy()
            try:
                return RenameFormatPolicy.from_settings(texts)
            except ValueError as exc:
                self._error(f"invalid value {rename.text!r}: {exc}", rename.origin)
                return DefaultReplicationPolicy()
        try:
            cls = find_policy_class(chosen.value)
        except PolicyClassError as exc:
            self._error(
                f"unknown replication policy: {exc}",
                chosen.origin,
                "use org.apache.kafka.connect.mirror.DefaultReplicationPolicy, "
                "...IdentityReplicationPolicy, or a Python package.module:ClassName",
            )
            return DefaultReplicationPolicy()
        try:
            return cls.from_settings(texts)
        except ValueError as exc:
            self._error(
                f"invalid value {settings['replication.policy.separator'].text!r}: {exc}",
                settings["replication.policy.separator"].origin,
            )
        except Exception as exc:  # noqa: BLE001 - a user's policy class may fail in any way
            self._error(f"{chosen.value} could not be created: {exc}", chosen.origin)
        return DefaultReplicationPolicy()

    def _start_position(
        self,
        settings: dict[str, Setting[Any]],
        java_clients: Mapping[_Role, ClientSettings],
    ) -> Setting[StartPosition]:
        chosen = settings["start.position"]
        if not chosen.origin.is_default:
            return chosen
        # MM2 users start from the end with consumer.auto.offset.reset=latest; honour it.
        reset = java_clients[("source", "consumer")].setting("auto.offset.reset")
        if reset.origin.is_default or reset.value.strip().lower() not in ("earliest", "latest"):
            return chosen
        word = reset.value.strip().lower()
        return Setting("start.position", parse_start_position(word), word, reset.origin)

    def _max_poll_records(
        self, chosen: tuple[_Rank, Setting[Any]], source: str, target: str
    ) -> Setting[Any]:
        # The engine's batch size may also be written as a source consumer setting
        # (A->B.consumer.max.poll.records, SRM's own example); the stronger line wins.
        best_rank, setting = chosen
        best: _Entry | None = None
        for rank, entry in self._client_candidates(source, target, "source", "consumer"):
            if entry.placement.name == "max.poll.records" and rank > best_rank:
                best_rank, best = rank, entry
        if best is None:
            return setting
        try:
            value = FLOW_SETTINGS["max.poll.records"].parse(best.text)
        except ValueError as exc:
            self._error(f"invalid value {shown(best.text, secret=best.secret)}: {exc}", best.origin)
            return setting
        return Setting("max.poll.records", value, best.text.strip(), best.origin, best.secret)

    # -- client roles ------------------------------------------------------------

    def _client_candidates(
        self, source: str | None, target: str | None, side: Side | None, client: ClientType
    ) -> Iterable[tuple[_Rank, _Entry]]:
        """Client-setting lines that apply to one role, with their rank."""
        cluster = source if side == "source" else target
        for entry in self.entries:
            placement = entry.placement
            selector = placement.selector
            if placement.kind != "client" or selector is None or not entry.valid:
                continue
            if client not in (client_types(placement.name) or ()):
                continue
            if not _client_scope_matches(
                placement, selector, side, client, cluster, source, target
            ):
                continue
            yield (int(placement.level), selector.specificity, entry.index), entry

    def _role_settings(
        self,
        label: str,
        source: str | None,
        target: str | None,
        side: Side | None,
        client: ClientType,
    ) -> list[Setting[str]]:
        """The winning Java/librdkafka-named settings of a role, weakest first."""
        winners: dict[str, tuple[_Rank, Setting[str]]] = {}
        for name, value in role_defaults(label, side, client).items():
            winners[name] = ((0, 0, 0), Setting(name, value, value))
        for rank, entry in self._client_candidates(source, target, side, client):
            name = entry.placement.name
            if name not in winners or rank > winners[name][0]:
                value = entry.text.strip()
                winners[name] = (rank, Setting(name, value, value, entry.origin, entry.secret))
        for name, value in forced_settings(side, client).items():
            current = winners.get(name)
            if current is not None and current[1].value.strip().lower() != value:
                self._warn(
                    f"ignored: Mirrorline always sets {name}={value} for this client",
                    current[1].origin,
                )
            winners[name] = ((9, 9, 0), Setting(name, value, value, Origin.forced()))
        return [s for _, s in sorted(winners.values(), key=lambda pair: pair[0])]

    def _flow_clients(
        self, source: str, target: str, checked: set[_Role]
    ) -> tuple[dict[_Role, ClientSettings], dict[_Role, ClientSettings], tuple[ConfigIssue, ...]]:
        clients: dict[_Role, ClientSettings] = {}
        java: dict[_Role, ClientSettings] = {}
        unchecked: list[ConfigIssue] = []
        for side in SIDES:
            for client in CLIENT_TYPES:
                role = (side, client)
                settings = self._role_settings(f"{source}->{target}", source, target, side, client)
                issues: list[ConfigIssue] = []
                clients[role] = ClientSettings(translate(settings, client, issues))
                java[role] = ClientSettings(
                    {s.name: s for s in settings if s.name in JAVA_CLIENT_SETTINGS}
                )
                (self.errors if role in checked else unchecked).extend(issues)
        return clients, java, tuple(unique_issues(unchecked))

    def _cluster(self, alias: str) -> ClusterConfig:
        clients: dict[ClientType, ClientSettings] = {}
        issues: list[ConfigIssue] = []
        for client in CLIENT_TYPES:
            settings = self._role_settings(alias, alias, alias, None, client)
            clients[client] = ClientSettings(translate(settings, client, issues))
        if clients["admin"].get("bootstrap.servers") is not None:
            self.errors.extend(issues)
            return ClusterConfig(alias, clients)
        return ClusterConfig(alias, clients, tuple(unique_issues(issues)))

    # -- checks across settings ---------------------------------------------------

    def _check_bootstrap(
        self,
        source: str,
        target: str,
        enabled: Setting[Any],
        java_clients: Mapping[_Role, ClientSettings],
    ) -> None:
        for (side, _client), settings in java_clients.items():
            if "bootstrap.servers" in settings:
                continue
            alias = source if side == "source" else target
            self.errors.append(
                ConfigIssue(
                    f"cluster {alias} has no bootstrap servers, but flow {source}->{target} "
                    "is enabled here",
                    enabled.origin,
                    f"add `{alias}.bootstrap.servers = host:port`",
                    key=f"{alias}.bootstrap.servers",
                )
            )

    def _check_dead_letters(self, settings: dict[str, Setting[Any]]) -> None:
        topic = settings["errors.deadletterqueue.topic.name"]
        if topic.value and settings["errors.tolerance"].value == "none":
            self._warn(
                "ignored while errors.tolerance=none: a failed record stops the flow",
                topic.origin,
                "set errors.tolerance=all to send failed records to this topic",
            )

    def _check_real_time(self, settings: dict[str, Setting[Any]], flow: str) -> None:
        mode = settings["data.path.mode"]
        if mode.value == "real-time" and settings["exactly.once.source.support"].value == "enabled":
            self._error(
                f"flow {flow}: data.path.mode=real-time cannot be combined with "
                "exactly-once: Spark's real-time mode gives a batch no transaction of its own",
                mode.origin,
                "use data.path.mode=micro-batch for exactly-once, or disable "
                "exactly.once.source.support",
            )

    def _check_reachability(
        self, flows: Sequence[FlowConfig], clusters: dict[str, ClusterConfig]
    ) -> None:
        enabled = {a for f in flows if f.enabled for a in (f.source, f.target)}
        for alias, cluster in clusters.items():
            if cluster.bootstrap_servers is not None or alias in enabled:
                continue
            if any(f.target == alias and f.value("emit.heartbeats.enabled") for f in flows):
                self._warn(
                    f"cluster {alias} has no bootstrap servers and is in no enabled flow; "
                    "no heartbeats are emitted into it",
                    Origin(self.file, None, "clusters"),
                    f"add `{alias}.bootstrap.servers`, or remove {alias} from clusters",
                )

    # -- reporting -----------------------------------------------------------------

    def _error(self, message: str, origin: Origin, hint: str | None = None) -> None:
        self.errors.append(ConfigIssue(message, origin, hint))

    def _warn(self, message: str, origin: Origin, hint: str | None = None) -> None:
        self.warnings.append(ConfigIssue(message, origin, hint, severity="warning"))


def _alias_problem(alias: str) -> str | None:
    if not alias:
        return "an alias in clusters is empty"
    if not _ALIAS.fullmatch(alias):
        return f"alias {alias!r} has characters that are not allowed in topic names"
    if alias in _RESERVED_ALIASES:
        return f"alias {alias!r} is a reserved prefix"
    return None


def _flow_scope_matches(placement: Placement, source: str, target: str) -> bool:
    if placement.level == Level.FLOW:
        return placement.flow == (source, target)
    if placement.level == Level.CLUSTER:
        return placement.cluster == target
    return True


def _client_scope_matches(
    placement: Placement,
    selector: ClientSelector,
    side: Side | None,
    client: ClientType,
    cluster: str | None,
    source: str | None,
    target: str | None,
) -> bool:
    if placement.level == Level.CLUSTER:
        return placement.cluster == cluster and selector.selects(None, client)
    if placement.level == Level.FLOW:
        return (
            side is not None
            and placement.flow == (source, target)
            and selector.selects(side, client)
        )
    return selector.selects(side, client)
