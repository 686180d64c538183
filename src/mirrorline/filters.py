"""Which topics, consumer groups and topic-config properties a flow replicates.

The rules follow MirrorMaker 2's default filters, so existing files keep
their meaning:

* every list entry is a regular expression that must match the *whole* name
  (Java's `Matcher.matches()`, Python's `re.fullmatch`); a plain topic name is
  just a regex that matches itself (and, because `.` matches any character,
  a few look-alikes);
* a name is replicated when it matches an include entry and no exclude entry;
* an empty include list replicates nothing, an empty exclude list excludes
  nothing.

Mirrorline adds literal names on top, for run-time allow and deny lists: a
denied name is never replicated, an allowed name is replicated even if an
exclude *pattern* matches it. From strongest to weakest: denied names,
allowed names, exclude patterns, include patterns.

Filters are immutable values. Changing a list gives a new filter, so a
running flow can swap its filter in one assignment while other threads keep
reading the old one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal, Self

__all__ = [
    "DEFAULT_CONFIG_PROPERTIES_EXCLUDE",
    "DEFAULT_GROUPS_EXCLUDE",
    "DEFAULT_TOPICS_EXCLUDE",
    "ConfigPropertyFilter",
    "FilterPatternError",
    "GroupFilter",
    "NameFilter",
    "TopicFilter",
]

#: MM2's `topics.exclude` default: internal topics of Kafka, Connect and MM2, and replica topics.
DEFAULT_TOPICS_EXCLUDE: tuple[str, ...] = (r".*[\-\.]internal", r".*\.replica", r"__.*")

#: MM2's `groups.exclude` default: console consumers, Connect workers and Kafka's own groups.
DEFAULT_GROUPS_EXCLUDE: tuple[str, ...] = (r"console-consumer-.*", r"connect-.*", r"__.*")

#: MM2's `config.properties.exclude` default: settings that belong to each cluster.
DEFAULT_CONFIG_PROPERTIES_EXCLUDE: tuple[str, ...] = (
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\.difference\.max\.ms",
    r"message\.timestamp\.type",
    r"unclean\.leader\.election\.enable",
    r"min\.insync\.replicas",
)

_NEVER = "(?!)"
_LEADING_FLAGS = re.compile(r"\(\?([a-zA-Z]+)\)")


class FilterPatternError(ValueError):
    """A list entry is not a regular expression Mirrorline and Java both accept."""

    def __init__(self, entry: str, reason: str) -> None:
        self.entry = entry
        self.reason = reason
        super().__init__(f"{entry!r} is not a valid regular expression: {reason}")


@dataclass(frozen=True)
class NameFilter:
    """Include and exclude rules for names (topics or groups).

    `include` and `exclude` hold regex entries, as written in the
    configuration; `allowed` and `denied` hold literal names added at run time.
    """

    include: tuple[str, ...] = (".*",)
    exclude: tuple[str, ...] = ()
    allowed: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()
    _include_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _exclude_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "include", tuple(self.include))
        object.__setattr__(self, "exclude", tuple(self.exclude))
        object.__setattr__(self, "allowed", frozenset(self.allowed))
        object.__setattr__(self, "denied", frozenset(self.denied))
        object.__setattr__(self, "_include_re", _compile_entries(self.include))
        object.__setattr__(self, "_exclude_re", _compile_entries(self.exclude))

    def matches(self, name: str) -> bool:
        """True if `name` passes the filter."""
        return bool(self.listed(name))

    def listed(self, name: str) -> bool | None:
        """What the lists say of `name`: True (in), False (out), None (none of them names it)."""
        if name in self.denied:
            return False
        if name in self.allowed:
            return True
        if self._exclude_re is not None and self._exclude_re.fullmatch(name):
            return False
        if self._include_re is not None and self._include_re.fullmatch(name):
            return True
        return None

    def allow(self, *names: str) -> Self:
        """A filter that also replicates these literal names (and no longer denies them)."""
        return replace(self, allowed=self.allowed | set(names), denied=self.denied - set(names))

    def deny(self, *names: str) -> Self:
        """A filter that never replicates these literal names (and no longer allows them)."""
        return replace(self, denied=self.denied | set(names), allowed=self.allowed - set(names))

    def java_pattern(self) -> str:
        """One regex, valid in Java and Python, fully matching exactly what `matches` accepts.

        It can be handed to a Kafka consumer's pattern subscription (for
        instance Spark's `subscribePattern`), which uses Java's `matches()`.
        It only encodes this filter: a flow must still drop internal topics
        and replication cycles (see `mirrorline.policy.may_replicate`), and a
        pattern subscription learns about new topics only on the consumer's
        metadata refresh. For those two reasons the engine should rather
        subscribe to the explicit list of topics its discovery loop selected;
        the pattern is for tools and for checking that list.
        """
        alternatives: list[str] = []
        if self.allowed:
            alternatives.append(f"(?:{_literal_alternatives(self.allowed)})$")
        if self.include:
            pattern = _alternatives(self.include)
            if self.exclude:
                pattern = f"(?!(?:{_alternatives(self.exclude)})$)(?:{pattern})"
            alternatives.append(pattern)
        if not alternatives:
            return _NEVER
        body = "|".join(f"(?:{a})" for a in alternatives)
        if self.denied:
            body = f"(?!(?:{_literal_alternatives(self.denied)})$)(?:{body})"
        return body


@dataclass(frozen=True)
class TopicFilter(NameFilter):
    """Selects the topics a flow replicates (MM2's `topics` and `topics.exclude`)."""

    include: tuple[str, ...] = (".*",)
    exclude: tuple[str, ...] = DEFAULT_TOPICS_EXCLUDE


@dataclass(frozen=True)
class GroupFilter(NameFilter):
    """Selects the consumer groups a flow checkpoints (MM2's `groups` and `groups.exclude`)."""

    include: tuple[str, ...] = (".*",)
    exclude: tuple[str, ...] = DEFAULT_GROUPS_EXCLUDE


@dataclass(frozen=True)
class ConfigPropertyFilter:
    """Selects the topic-config properties copied to remote topics.

    `use_defaults_from` says whose defaults a property that is at its default
    value on the source should get: the target's (MM2's default, the property
    is left alone) or the source's (the source default is copied).
    """

    exclude: tuple[str, ...] = DEFAULT_CONFIG_PROPERTIES_EXCLUDE
    use_defaults_from: Literal["source", "target"] = "target"
    _exclude_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exclude", tuple(self.exclude))
        if self.use_defaults_from not in ("source", "target"):
            raise ValueError("use_defaults_from must be 'source' or 'target'")
        object.__setattr__(self, "_exclude_re", _compile_entries(self.exclude))

    def should_replicate(self, prop: str) -> bool:
        """True if the property's value is copied to the remote topic."""
        return self._exclude_re is None or self._exclude_re.fullmatch(prop) is None

    def should_replicate_source_default(self, prop: str) -> bool:
        """True if a property left at its default on the source is copied too."""
        return self.use_defaults_from == "source" and self.should_replicate(prop)


def _scoped(entry: str) -> str:
    # Java lets a pattern start with inline flags such as "(?i)"; once entries
    # are joined, Python only accepts them scoped, so "(?i)x" becomes "(?i:x)",
    # which both languages read the same way.
    match = _LEADING_FLAGS.match(entry)
    if match is None:
        return entry
    return f"(?{match.group(1)}:{entry[match.end() :]})"


def _check_entry(entry: str) -> str:
    if "(?P" in entry:
        raise FilterPatternError(entry, "(?P...) groups exist only in Python; use Java syntax")
    scoped = _scoped(entry)
    try:
        re.compile(scoped)
    except re.error as exc:
        raise FilterPatternError(entry, str(exc)) from None
    return scoped


def _alternatives(entries: Iterable[str]) -> str:
    return "|".join(f"(?:{_check_entry(e)})" for e in entries)


def _literal_alternatives(names: Iterable[str]) -> str:
    return "|".join(re.escape(n) for n in sorted(names))


def _compile_entries(entries: tuple[str, ...]) -> re.Pattern[str] | None:
    # MM2 joins the entries with "|" and treats an empty list as "matches nothing".
    if not entries:
        return None
    return re.compile(_alternatives(entries))
