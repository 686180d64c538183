"""Which placed line of the file wins a setting, for one flow or one client role.

`precedence.classify` places each key: its level, its scope (a cluster or a
flow), its kind and, for a client setting, the roles its prefix selects. The
loader keeps every placed line as an `Entry`. This module applies the ranking
that `precedence` describes: of the lines whose scope covers the flow or role
at hand, the one with the highest `Rank` wins, and a setting no line covers
keeps its default. Placing and ranking are apart because a line is placed
once, but ranked again for every flow and every role it might apply to.

A `Rank` is (level, strength inside the level, line index): inside a level a
current name beats an old one for flow settings, and a more specific prefix
beats a broader one for client settings; last, the later line wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mirrorline.config.clients import client_types
from mirrorline.config.model import ClientType, Setting, Side
from mirrorline.config.origin import Origin
from mirrorline.config.precedence import UNKNOWN, ClientSelector, Level, Placement
from mirrorline.config.settings import FLOW_SETTINGS

__all__ = [
    "Entry",
    "Rank",
    "client_candidates",
    "flow_setting",
    "policy_extras",
    "transform_lines",
    "unknown_settings",
]

Rank = tuple[int, int, int]


@dataclass
class Entry:
    """One line of the file, resolved, placed and (for flow settings) parsed."""

    key: str
    text: str
    origin: Origin
    secret: bool
    index: int
    placement: Placement
    parsed: Any = None
    valid: bool = True


def flow_setting(
    entries: Iterable[Entry], name: str, source: str, target: str
) -> tuple[Rank, Setting[Any]]:
    """The winning line for a flow setting (or its default), with its rank."""
    best: tuple[Rank, Entry] | None = None
    for entry in entries:
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


def policy_extras(entries: Iterable[Entry], source: str, target: str) -> dict[str, Setting[Any]]:
    """The winning `replication.policy.*` lines of a flow, for its policy class."""
    return _winners(entries, source, target, lambda p: p.kind == "policy")


def transform_lines(entries: Iterable[Entry], source: str, target: str) -> dict[str, Setting[Any]]:
    """The winning `transforms*` and `predicates*` lines of a flow, each key on its own."""
    return _winners(entries, source, target, lambda p: p.kind == "smt")


def unknown_settings(entries: Iterable[Entry], source: str, target: str) -> dict[str, Setting[Any]]:
    """The flow's own lines (`A->B.key`) that Mirrorline does not know: a Java class's settings.

    MM2 hands a connector every line of its flow, but of the global lines only
    those it knows (and `replication.policy.*`): so do these.
    """
    return _winners(
        entries,
        source,
        target,
        lambda p: p.kind == "ignored" and p.note == UNKNOWN and p.level == Level.FLOW,
    )


def _winners(
    entries: Iterable[Entry], source: str, target: str, wanted: Callable[[Placement], bool]
) -> dict[str, Setting[Any]]:
    winners: dict[str, tuple[Rank, Entry]] = {}
    for entry in entries:
        placement = entry.placement
        if not wanted(placement) or not _flow_scope_matches(placement, source, target):
            continue
        rank = (int(placement.level), 1, entry.index)
        if placement.name not in winners or rank > winners[placement.name][0]:
            winners[placement.name] = (rank, entry)
    return {
        name: Setting(name, e.text.strip(), e.text.strip(), e.origin, e.secret)
        for name, (_, e) in winners.items()
    }


def client_candidates(
    entries: Iterable[Entry],
    source: str | None,
    target: str | None,
    side: Side | None,
    client: ClientType,
) -> Iterable[tuple[Rank, Entry]]:
    """Client-setting lines that apply to one role, with their rank."""
    cluster = source if side == "source" else target
    for entry in entries:
        placement = entry.placement
        selector = placement.selector
        if placement.kind != "client" or selector is None or not entry.valid:
            continue
        if client not in (client_types(placement.name) or ()):
            continue
        if not _client_scope_matches(placement, selector, side, client, cluster, source, target):
            continue
        yield (int(placement.level), selector.specificity, entry.index), entry


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
