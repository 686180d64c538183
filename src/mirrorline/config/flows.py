"""One replication flow, built from the placed lines of a file and checked as a whole.

Every ordered pair of clusters in `clusters` is a flow. The loader places each
line once; then, for each flow, every flow setting is ranked on its own
(`ranking`), and this module puts the winners together and owns what depends
on more than one of them:

* the replication policy: `replication.policy.class` or `topic.rename.format`
  (not both), with the policy's own `replication.policy.*` settings, and the
  filters; each may be a Java class of the file's own (`plugin_classes`);
* the start position, which honours an MM2 source consumer's
  `auto.offset.reset` when `start.position` is not set;
* `max.poll.records`, which may also be written as a source consumer setting;
* the flow's client roles (`client_roles`), checked as far as the flow uses
  them: all of them if it replicates, the target's producer and admin client
  if it only emits heartbeats into a target with bootstrap servers;
* the flow's single message transforms (`transforms`), from the winning
  `transforms*`/`predicates*` lines and `header.converter`, checked for
  enabled flows only;
* checks across settings: bootstrap servers for an enabled flow, a dead
  letter topic that `errors.tolerance=none` never uses, real-time mode with
  exactly-once.

Problems are noted in the loader's `IssueLog`, never raised, so that all of
them are reported at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mirrorline.config.client_roles import ClientRoles, Role
from mirrorline.config.errors import ConfigIssue, IssueLog
from mirrorline.config.model import (
    CLIENT_TYPES,
    SIDES,
    ClientSettings,
    ClusterConfig,
    FlowConfig,
    Setting,
)
from mirrorline.config.plugin_classes import ClassSettings
from mirrorline.config.ranking import (
    Entry,
    Rank,
    client_candidates,
    flow_setting,
    policy_extras,
    transform_lines,
    unknown_settings,
)
from mirrorline.config.redact import shown
from mirrorline.config.settings import FLOW_SETTINGS
from mirrorline.config.start_position import StartPosition, parse_start_position
from mirrorline.config.transforms import TransformChain, build_chain
from mirrorline.policy import (
    DefaultReplicationPolicy,
    PolicyClassError,
    RenameFormatPolicy,
    ReplicationPolicy,
)
from mirrorline.policy import policy_class as find_policy_class

__all__ = ["FlowBuilder"]


@dataclass(frozen=True)
class FlowBuilder:
    """Builds the flows of one file from its placed lines; problems go to `issues`."""

    entries: Sequence[Entry]
    issues: IssueLog

    def build(self, source: str, target: str, clusters: dict[str, ClusterConfig]) -> FlowConfig:
        """Flow `source->target`, its client roles checked as far as it uses them."""
        ranked = {name: flow_setting(self.entries, name, source, target) for name in FLOW_SETTINGS}
        settings = {name: setting for name, (_, setting) in ranked.items()}
        enabled = bool(settings["enabled"].value)
        checked: set[Role] = set()
        if enabled:
            checked = {(s, c) for s in SIDES for c in CLIENT_TYPES}
        elif settings["emit.heartbeats.enabled"].value and clusters[target].bootstrap_servers:
            checked = {("target", "producer"), ("target", "admin")}
        roles = ClientRoles(self.entries, self.issues)
        clients, java_clients, unchecked = roles.flow_clients(source, target, checked)
        settings["start.position"] = self._start_position(settings, java_clients)
        settings["max.poll.records"] = self._max_poll_records(
            ranked["max.poll.records"], source, target
        )
        if enabled:
            self._check_bootstrap(source, target, settings["enabled"], java_clients)
        self._check_dead_letters(settings)
        self._check_real_time(settings, f"{source}->{target}")
        extras = policy_extras(self.entries, source, target)
        classes = self._classes(settings, extras, source, target, checked)
        policy = self._policy(settings, classes)
        chain = TransformChain()
        smt_lines = transform_lines(self.entries, source, target)
        if enabled:
            chain = build_chain(
                smt_lines,
                settings["header.converter"].value,
                self.issues,
                f"{source}->{target}",
            )
        return FlowConfig(
            source=source,
            target=target,
            # The chain's lines too, so that every listing shows them with their origins.
            settings={**settings, **extras, **smt_lines},
            policy=policy,
            topic_filter=classes.topic_filter(),
            group_filter=classes.group_filter(),
            config_property_filter=classes.config_property_filter(),
            start_position=settings["start.position"].value,
            clients=clients,
            java_clients=java_clients,
            client_issues=unchecked,
            transforms=chain,
        )

    def _classes(
        self,
        settings: dict[str, Setting[Any]],
        extras: dict[str, Setting[Any]],
        source: str,
        target: str,
        checked: set[Role],
    ) -> ClassSettings:
        """The flow's class settings; its classes are configured with these texts."""
        unknown = unknown_settings(self.entries, source, target)
        texts = {name: s.text for name, s in {**unknown, **settings, **extras}.items()}
        texts["source.cluster.alias"] = source
        texts["target.cluster.alias"] = target
        enabled = bool(settings["enabled"].value)
        return ClassSettings(settings, texts, self.issues, bool(checked), enabled)

    def _policy(
        self, settings: dict[str, Setting[Any]], classes: ClassSettings
    ) -> ReplicationPolicy:
        chosen = settings["replication.policy.class"]
        rename = settings["topic.rename.format"]
        texts = dict(classes.configuration)
        if rename.value:
            if not chosen.origin.is_default:
                self.issues.error(
                    "topic.rename.format and replication.policy.class both choose how remote "
                    "topics are named",
                    rename.origin,
                    f"keep one of them (replication.policy.class is set at {chosen.origin})",
                )
                return DefaultReplicationPolicy()
            try:
                return RenameFormatPolicy.from_settings(texts)
            except ValueError as exc:
                self.issues.error(f"invalid value {rename.text!r}: {exc}", rename.origin)
                return DefaultReplicationPolicy()
        if classes.is_java("replication.policy.class"):
            return classes.java_policy() or DefaultReplicationPolicy()
        try:
            cls = find_policy_class(chosen.value)
        except PolicyClassError as exc:
            self.issues.error(
                f"unknown replication policy {chosen.value}: in no jar of plugin.path "
                f"({classes.jars_shown}), and as a Python class: {exc}",
                chosen.origin,
                "use org.apache.kafka.connect.mirror.DefaultReplicationPolicy, "
                "...IdentityReplicationPolicy, a Java class in a jar of plugin.path, "
                "or a Python package.module:ClassName",
            )
            return DefaultReplicationPolicy()
        try:
            return cls.from_settings(texts)
        except ValueError as exc:
            self.issues.error(
                f"invalid value {settings['replication.policy.separator'].text!r}: {exc}",
                settings["replication.policy.separator"].origin,
            )
        except Exception as exc:  # noqa: BLE001 - a user's policy class may fail in any way
            self.issues.error(f"{chosen.value} could not be created: {exc}", chosen.origin)
        return DefaultReplicationPolicy()

    def _start_position(
        self,
        settings: dict[str, Setting[Any]],
        java_clients: Mapping[Role, ClientSettings],
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
        self, chosen: tuple[Rank, Setting[Any]], source: str, target: str
    ) -> Setting[Any]:
        # The engine's batch size may also be written as a source consumer setting
        # (A->B.consumer.max.poll.records, SRM's own example); the stronger line wins.
        best_rank, setting = chosen
        best: Entry | None = None
        for rank, entry in client_candidates(self.entries, source, target, "source", "consumer"):
            if entry.placement.name == "max.poll.records" and rank > best_rank:
                best_rank, best = rank, entry
        if best is None:
            return setting
        try:
            value = FLOW_SETTINGS["max.poll.records"].parse(best.text)
        except ValueError as exc:
            self.issues.error(
                f"invalid value {shown(best.text, secret=best.secret)}: {exc}", best.origin
            )
            return setting
        return Setting("max.poll.records", value, best.text.strip(), best.origin, best.secret)

    def _check_bootstrap(
        self,
        source: str,
        target: str,
        enabled: Setting[Any],
        java_clients: Mapping[Role, ClientSettings],
    ) -> None:
        for (side, _client), settings in java_clients.items():
            if "bootstrap.servers" in settings:
                continue
            alias = source if side == "source" else target
            self.issues.errors.append(
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
            self.issues.warn(
                "ignored while errors.tolerance=none: a failed record stops the flow",
                topic.origin,
                "set errors.tolerance=all to send failed records to this topic",
            )

    def _check_real_time(self, settings: dict[str, Setting[Any]], flow: str) -> None:
        mode = settings["data.path.mode"]
        if mode.value == "real-time" and settings["exactly.once.source.support"].value == "enabled":
            self.issues.error(
                f"flow {flow}: data.path.mode=real-time cannot be combined with "
                "exactly-once: Spark's real-time mode gives a batch no transaction of its own",
                mode.origin,
                "use data.path.mode=micro-batch for exactly-once, or disable "
                "exactly.once.source.support",
            )
