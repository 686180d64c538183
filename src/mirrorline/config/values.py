"""Parsers for the value types of MM2 settings, with Kafka's `ConfigDef` rules.

Each parser takes the text as written and returns a typed value, or raises
`ValueError` with a short reason. The reason never repeats the value (it may
be a secret); the caller adds the key, the place and, when it is safe, the
value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from mirrorline.filters import FilterPatternError, NameFilter

__all__ = [
    "parse_bool",
    "parse_choice",
    "parse_int",
    "parse_list",
    "parse_patterns",
    "parse_positive_seconds",
    "parse_replication_factor",
    "parse_topic_name",
    "validate_topic_name",
]

_INTEGER = re.compile(r"[+-]?[0-9]+")
_LIST_SEPARATOR = re.compile(r"\s*,\s*")
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def parse_bool(text: str) -> bool:
    """`true` or `false`, any case (Kafka's BOOLEAN type)."""
    word = text.strip().lower()
    if word == "true":
        return True
    if word == "false":
        return False
    raise ValueError("expected true or false")


def parse_int(text: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """A whole number in decimal, optionally bounded."""
    stripped = text.strip()
    if not _INTEGER.fullmatch(stripped):
        raise ValueError("expected a whole number")
    number = int(stripped)
    if minimum is not None and number < minimum:
        raise ValueError(f"must be at least {minimum}")
    if maximum is not None and number > maximum:
        raise ValueError(f"must be at most {maximum}")
    return number


def parse_positive_seconds(text: str) -> int:
    """An interval in seconds; must be positive (turn loops off with their `.enabled` flag)."""
    seconds = parse_int(text)
    if seconds <= 0:
        raise ValueError("must be a positive number of seconds")
    return seconds


def parse_replication_factor(text: str) -> int:
    """A replication factor: at least 1, or -1 for the broker's default."""
    factor = parse_int(text, maximum=32767)
    if factor == -1 or factor >= 1:
        return factor
    raise ValueError("must be -1 (the broker's default) or at least 1")


def parse_list(text: str) -> tuple[str, ...]:
    """A comma-separated list; blank text is the empty list (Kafka's LIST type)."""
    stripped = text.strip()
    if not stripped:
        return ()
    return tuple(_LIST_SEPARATOR.split(stripped))


def parse_patterns(text: str) -> tuple[str, ...]:
    """A comma-separated list of whole-name regular expressions."""
    entries = parse_list(text)
    try:
        NameFilter(include=entries)
    except FilterPatternError as exc:
        raise ValueError(
            f"entry {exc.entry!r} is not a valid regular expression ({exc.reason})"
        ) from None
    return entries


def parse_choice(choices: Iterable[str]) -> Callable[[str], str]:
    """A parser accepting one of `choices`, any case, returned in lower case."""
    allowed = tuple(choices)

    def parse(text: str) -> str:
        word = text.strip().lower()
        if word not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return word

    return parse


def validate_topic_name(name: str) -> str:
    """A legal Kafka topic name."""
    if name in (".", "..") or not _TOPIC_NAME.fullmatch(name):
        raise ValueError(
            "a topic name has 1 to 249 characters among letters, digits, '.', '_' and '-'"
        )
    return name


def parse_topic_name(text: str) -> str:
    """A topic name, or blank for none."""
    name = text.strip()
    return validate_topic_name(name) if name else ""
