"""Loading an MM2 properties file into a checked `MirrorConfig`.

The loader reads every line, resolves provider placeholders, reads the
cluster aliases, places each key (`precedence.classify`) and checks each value
once. From the placed lines it then builds every cluster's clients
(`client_roles`) and every flow (`flows`), both by ranking the candidates
(`ranking`), and checks that each cluster is reachable. It never stops at the
first problem: all errors are gathered and raised together in one
`ConfigError`, so `mirrorline config check` can show them all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirrorline.config.client_roles import ClientRoles
from mirrorline.config.clients import java_only
from mirrorline.config.errors import ConfigError, IssueLog, unique_issues
from mirrorline.config.flows import FlowBuilder
from mirrorline.config.model import ClusterConfig, FlowConfig, MirrorConfig, Setting
from mirrorline.config.origin import Origin
from mirrorline.config.precedence import UNKNOWN, KeyProblem, classify
from mirrorline.config.properties import Property, parse_properties, read_properties
from mirrorline.config.providers import ProviderContext, resolve_placeholders
from mirrorline.config.ranking import Entry
from mirrorline.config.redact import is_secret_key, shown
from mirrorline.config.service_settings import SERVICE_SETTINGS
from mirrorline.config.settings import FLOW_SETTINGS
from mirrorline.config.transform_check import check_transforms
from mirrorline.config.unapplied import converter_problem
from mirrorline.config.values import parse_list

__all__ = ["load_config", "parse_config"]

_ALIAS = re.compile(r"[a-zA-Z0-9._-]+")
_RESERVED_ALIASES = ("workers", "connectors", "consumer", "producer", "admin")


def load_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> MirrorConfig:
    """Load and check an MM2 properties file.

    `environ` replaces `os.environ` for `${env:...}` placeholders (tests,
    embedding). Relative `${file:...}` paths are read from the file's
    directory. Raises `ConfigError` listing every problem found.
    """
    file = Path(path)
    issues = IssueLog()
    properties = read_properties(file, issues.errors)
    context = ProviderContext(
        environ=dict(os.environ) if environ is None else environ, base_dir=file.parent
    )
    return _Loader(str(file), properties, context, issues).load()


def parse_config(
    text: str,
    *,
    source: str = "<text>",
    base_dir: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> MirrorConfig:
    """Like `load_config`, for properties text; `source` names it in messages."""
    issues = IssueLog()
    properties = parse_properties(text, source=source, issues=issues.errors)
    context = ProviderContext(
        environ=dict(os.environ) if environ is None else environ,
        base_dir=Path(base_dir) if base_dir is not None else Path.cwd(),
    )
    return _Loader(source, properties, context, issues).load()


@dataclass
class _Loader:
    file: str
    properties: list[Property]
    context: ProviderContext
    issues: IssueLog
    entries: list[Entry] = field(default_factory=list)
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
        if self.issues.errors or config is None:
            raise ConfigError(self.issues.errors)
        return config

    # -- reading lines -------------------------------------------------------------

    def _latest(self, properties: list[Property]) -> list[Property]:
        """Keep the last occurrence of each key, as Java does, and say so."""
        last: dict[str, Property] = {}
        for prop in properties:
            earlier = last.get(prop.key)
            if earlier is not None:
                self.issues.warn(
                    f"set again on line {prop.origin.line}; the later line wins",
                    earlier.origin,
                    "remove one of the two lines",
                )
            last[prop.key] = prop
        keep = {id(p) for p in last.values()}
        return [p for p in properties if id(p) in keep]

    def _resolve(self, properties: list[Property]) -> list[tuple[Property, str, bool]]:
        result = []
        for prop in properties:
            before = len(self.issues.errors)
            text, used = resolve_placeholders(
                prop.value, prop.origin, self.context, self.issues.errors
            )
            if len(self.issues.errors) == before:
                result.append((prop, text, used or is_secret_key(prop.key)))
            else:
                self.unresolved.add(prop.key)
        return result

    def _read_clusters(self, resolved: list[tuple[Property, str, bool]]) -> list[str]:
        found = [(p, text) for p, text, _ in resolved if p.key == "clusters"]
        if not found and "clusters" in self.unresolved:
            return []
        if not found:
            self.issues.error(
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
                self.issues.error(
                    problem, prop.origin, "aliases use letters, digits, '.', '_', '-'"
                )
            elif alias in aliases:
                self.issues.error(f"alias {alias!r} is listed twice", prop.origin, "list it once")
            else:
                aliases.append(alias)
        if not parse_list(text):
            self.issues.error("clusters is empty", prop.origin, "list at least two cluster aliases")
        return aliases

    def _place(self, index: int, prop: Property, text: str, secret: bool) -> None:
        placed = classify(prop.key, self.aliases)
        if isinstance(placed, KeyProblem):
            self.issues.error(placed.message, prop.origin, placed.hint)
            return
        entry = Entry(prop.key, text, prop.origin, secret, index, placed)
        refused = converter_problem(placed.name, text) if placed.kind == "ignored" else None
        if refused is not None:
            self.issues.error(refused[0], prop.origin, refused[1])
            return
        if placed.kind == "ignored":
            self.issues.warn(f"ignored: {placed.note}", prop.origin)
            if placed.note == UNKNOWN:  # kept for the flow's Java classes (`unknown_settings`)
                self.entries.append(entry)
            return
        if placed.kind == "service":
            self._parse_service_value(entry)
            return
        if placed.kind == "flow":
            self._parse_flow_value(entry)
        if placed.kind == "client":
            self._check_client_entry(entry)
        if placed.legacy:
            self.issues.warn(
                f"old name of {placed.name}; it still works",
                prop.origin,
                f"rename it {placed.name}",
            )
        self.entries.append(entry)

    def _parse_flow_value(self, entry: Entry) -> None:
        spec = FLOW_SETTINGS[entry.placement.name]
        try:
            entry.parsed = spec.parse(entry.text)
        except ValueError as exc:
            entry.valid = False
            hint = None
            if spec.name.endswith(".interval.seconds"):
                loop = spec.name.removesuffix(".interval.seconds")
                hint = f"to stop this loop, set {loop}.enabled = false"
            self.issues.error(
                f"invalid value {shown(entry.text, secret=entry.secret)}: {exc}", entry.origin, hint
            )

    def _parse_service_value(self, entry: Entry) -> None:
        spec = SERVICE_SETTINGS[entry.key]
        try:
            value = spec.parse(entry.text)
        except ValueError as exc:
            shown_text = shown(entry.text, secret=entry.secret)
            self.issues.error(f"invalid value {shown_text}: {exc}", entry.origin)
            return
        named = value if isinstance(value, tuple) and entry.key.endswith(".clusters") else ()
        for alias in named:
            if alias not in self.aliases:
                self.issues.error(
                    f"{alias!r} is not a cluster alias listed in clusters",
                    entry.origin,
                    f"known aliases: {', '.join(self.aliases)}",
                )
        self.service[entry.key] = Setting(
            entry.key, value, entry.text.strip(), entry.origin, entry.secret
        )

    def _check_client_entry(self, entry: Entry) -> None:
        name = entry.placement.name
        if entry.placement.note:
            self.issues.warn(f"ignored: {entry.placement.note}", entry.origin)
        rule = java_only(name)
        if rule is None:
            return
        entry.valid = False
        if rule.action == "refused":
            self.issues.error(f"{name} cannot be used with librdkafka: {rule.reason}", entry.origin)
        else:
            self.issues.warn(f"ignored: {rule.reason}", entry.origin)

    # -- building clusters and flows -----------------------------------------------

    def _build(self) -> MirrorConfig:
        roles = ClientRoles(self.entries, self.issues)
        clusters = {alias: roles.cluster(alias) for alias in self.aliases}
        builder = FlowBuilder(self.entries, self.issues)
        flows = tuple(
            builder.build(source, target, clusters)
            for source in self.aliases
            for target in self.aliases
            if source != target
        )
        self._check_reachability(flows, clusters)
        if not self.issues.errors:  # the classes can only be checked in a sound file
            check_transforms(flows, self.issues)
        return MirrorConfig(
            self.file, clusters, flows, tuple(unique_issues(self.issues.warnings)), self.service
        )

    def _check_reachability(
        self, flows: Sequence[FlowConfig], clusters: dict[str, ClusterConfig]
    ) -> None:
        enabled = {a for f in flows if f.enabled for a in (f.source, f.target)}
        for alias, cluster in clusters.items():
            if cluster.bootstrap_servers is not None or alias in enabled:
                continue
            if any(f.target == alias and f.value("emit.heartbeats.enabled") for f in flows):
                self.issues.warn(
                    f"cluster {alias} has no bootstrap servers and is in no enabled flow; "
                    "no heartbeats are emitted into it",
                    Origin(self.file, None, "clusters"),
                    f"add `{alias}.bootstrap.servers`, or remove {alias} from clusters",
                )


def _alias_problem(alias: str) -> str | None:
    if not alias:
        return "an alias in clusters is empty"
    if not _ALIAS.fullmatch(alias):
        return f"alias {alias!r} has characters that are not allowed in topic names"
    if alias in _RESERVED_ALIASES:
        return f"alias {alias!r} is a reserved prefix"
    return None
