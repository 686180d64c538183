"""A flow's single message transforms (SMTs), as an MM2 file configures them.

Kafka Connect's syntax, which MM2 files use unchanged:

    transforms = tag, route
    transforms.tag.type = org.apache.kafka.connect.transforms.InsertHeader
    transforms.tag.header = origin
    transforms.tag.value.literal = east
    transforms.route.type = org.apache.kafka.connect.transforms.RegexRouter
    transforms.route.regex = east[.](.*)
    transforms.route.replacement = $1-copy
    transforms.route.predicate = notHeartbeats
    transforms.route.negate = false
    predicates = notHeartbeats
    predicates.notHeartbeats.type = org.apache.kafka.connect.transforms.predicates.TopicNameMatches
    predicates.notHeartbeats.pattern = .*heartbeats

Each of these keys is a flow setting of its own, ranked like any other
(`ranking`): global, `workers.`/`connectors.`, the target's cluster level, and
`A->B.` for one flow, so that `A->B.transforms = route` chooses a chain for
one flow while `transforms.route.regex` set globally still configures it.
This module puts a flow's winning lines together as a `TransformChain`: the
transforms in order, each with its class, its own settings (every
`transforms.<name>.<key>` line, `type` included, as Connect hands them to
`configure`), its predicate and `negate`, and the predicates it uses, all
with their origins.

Checked here, as Connect's `ConnectorConfig` checks them: an alias listed
twice, a transform or predicate without `type`, a predicate that `predicates`
does not list, a `negate` that is not a boolean. Whether a class exists and
accepts its settings is Connect's own knowledge: `transform_check` asks the
real classes in a short Java run. The writer runs the chain on each record
(`jvm/writer`, `TransformChain`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mirrorline.config.errors import IssueLog
from mirrorline.config.origin import Origin
from mirrorline.config.values import parse_bool, parse_list

if TYPE_CHECKING:  # the model holds a flow's chain
    from mirrorline.config.model import Setting

__all__ = [
    "BYTE_ARRAY_CONVERTER",
    "SIMPLE_HEADER_CONVERTER",
    "Plugin",
    "Transform",
    "TransformChain",
    "build_chain",
    "is_transform_key",
]

BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
SIMPLE_HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
_KINDS = ("transforms", "predicates")


def is_transform_key(name: str) -> bool:
    """Whether a setting name (without level prefix) belongs to transforms or predicates."""
    return any(name == kind or name.startswith(kind + ".") for kind in _KINDS)


@dataclass(frozen=True)
class Plugin:
    """A transform's or predicate's class and settings, as Connect's `configure` gets them."""

    name: str
    class_name: str
    settings: Mapping[str, Setting[str]]  # `type` included, the alias prefix removed
    origin: Origin  # of the `type` line

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "class": self.class_name,
            "settings": {key: s.value for key, s in self.settings.items()},
        }


@dataclass(frozen=True)
class Transform:
    """One step of a chain: a transform, applied where its predicate (or not) says."""

    plugin: Plugin
    predicate: str | None = None
    negate: bool = False

    @property
    def name(self) -> str:
        return self.plugin.name


@dataclass(frozen=True)
class TransformChain:
    """A flow's transforms in order and the predicates they use; empty: records as they are."""

    transforms: tuple[Transform, ...] = ()
    predicates: Mapping[str, Plugin] = field(default_factory=dict)
    # MM2's header converter: how Connect turns headers back into bytes.
    header_converter: str = BYTE_ARRAY_CONVERTER

    @property
    def changes_records(self) -> bool:
        """Whether the writer must run Connect on each record (else it copies them)."""
        return bool(self.transforms) or self.header_converter != BYTE_ARRAY_CONVERTER

    def as_json(self) -> dict[str, Any] | None:
        """The chain as the writer reads it (`TransformChain.Spec`); None: copy as is."""
        if not self.changes_records:
            return None
        return {
            "transforms": [
                {**t.plugin.as_json(), "predicate": t.predicate, "negate": t.negate}
                for t in self.transforms
            ],
            "predicates": [p.as_json() for p in self.predicates.values()],
            "header_converter": self.header_converter,
        }


def build_chain(
    lines: Mapping[str, Setting[str]], header_converter: str, issues: IssueLog, flow: str
) -> TransformChain:
    """The chain of a flow's winning `transforms*`/`predicates*` lines; problems to `issues`."""
    predicate_names = _aliases(lines, "predicates", issues, flow)
    predicates = {
        name: plugin
        for name in predicate_names
        if (plugin := _plugin(lines, "predicates", name, issues, flow)) is not None
    }
    transforms: list[Transform] = []
    for name in _aliases(lines, "transforms", issues, flow):
        plugin = _plugin(lines, "transforms", name, issues, flow)
        if plugin is None:
            continue
        settings = dict(plugin.settings)
        predicate = settings.pop("predicate", None)
        negate = settings.pop("negate", None)
        step = Transform(
            Plugin(name, plugin.class_name, settings, plugin.origin),
            predicate.value.strip() if predicate is not None else None,
            _negate(negate, issues) if negate is not None else False,
        )
        if predicate is not None and step.predicate not in predicate_names:
            issues.error(
                f"flow {flow}: transform {name} uses predicate {step.predicate!r}, which "
                "predicates does not list",
                predicate.origin,
                f"add {step.predicate} to predicates and set predicates.{step.predicate}.type",
            )
        if negate is not None and predicate is None:
            issues.warn(
                f"flow {flow}: negate has no effect on transform {name} without a predicate",
                negate.origin,
            )
        transforms.append(step)
    return TransformChain(tuple(transforms), predicates, header_converter)


def _aliases(
    lines: Mapping[str, Setting[str]], kind: str, issues: IssueLog, flow: str
) -> list[str]:
    listed = lines.get(kind)
    if listed is None:
        return []
    names: list[str] = []
    for name in parse_list(listed.value):
        if name in names:
            issues.error(f"flow {flow}: {name} is listed twice", listed.origin, "list it once")
        else:
            names.append(name)
    return names


def _plugin(
    lines: Mapping[str, Setting[str]], kind: str, name: str, issues: IssueLog, flow: str
) -> Plugin | None:
    prefix = f"{kind}.{name}."
    settings = {
        key[len(prefix) :]: setting for key, setting in lines.items() if key.startswith(prefix)
    }
    chosen = settings.get("type")
    if chosen is None or not chosen.value.strip():
        listed = lines[kind]
        issues.error(
            f"flow {flow}: {kind[:-1]} {name} has no class ({prefix}type is not set)",
            chosen.origin if chosen is not None else listed.origin,
            f"set {prefix}type to a Kafka Connect {kind[:-1]} class",
        )
        return None
    return Plugin(name, chosen.value.strip(), settings, chosen.origin)


def _negate(setting: Setting[str], issues: IssueLog) -> bool:
    try:
        return parse_bool(setting.value)
    except ValueError as exc:
        issues.error(f"invalid value {setting.value.strip()!r}: {exc}", setting.origin)
        return False
