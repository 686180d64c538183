"""Configuration problems, reported all at once and always pointing at a place.

A user who runs `mirrorline config check` wants the whole list of mistakes in
one go, each with what is wrong, where (key and `file:line`) and what to do.
So validation code never raises on the first problem: it collects
`ConfigIssue` values (in an `IssueLog` while a file loads) and raises one
`ConfigError` at the end. Warnings use the same type and travel on the loaded
configuration instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from mirrorline.config.origin import Origin

__all__ = ["ConfigError", "ConfigIssue", "IssueLog", "Severity", "unique_issues"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in a configuration.

    `message` says what is wrong and `hint` what to do about it. Neither may
    quote a secret value: callers describe values through
    `mirrorline.config.redact.shown`.
    """

    message: str
    origin: Origin | None = None
    hint: str | None = None
    severity: Severity = "error"
    key: str | None = None

    @property
    def setting(self) -> str | None:
        """The key the issue is about, as the user wrote it."""
        if self.key is not None:
            return self.key
        return self.origin.key if self.origin is not None else None

    @property
    def where(self) -> str | None:
        """`file:line` of the issue, when it has one."""
        if self.origin is None or self.origin.file is None:
            return None
        return self.origin.where

    def __str__(self) -> str:
        parts = [p for p in (self.where, self.setting) if p]
        text = ": ".join([*parts, self.message])
        if self.hint:
            text += f" ({self.hint})"
        return text

    def to_dict(self) -> dict[str, object]:
        """A stable, JSON-ready form."""
        origin = self.origin
        return {
            "severity": self.severity,
            "key": self.setting,
            "file": origin.file if origin else None,
            "line": origin.line if origin else None,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass
class IssueLog:
    """The errors and warnings found so far while a file loads, in the order found."""

    errors: list[ConfigIssue] = field(default_factory=list)
    warnings: list[ConfigIssue] = field(default_factory=list)

    def error(self, message: str, origin: Origin, hint: str | None = None) -> None:
        """Note a problem that makes the configuration unusable."""
        self.errors.append(ConfigIssue(message, origin, hint))

    def warn(self, message: str, origin: Origin, hint: str | None = None) -> None:
        """Note a problem the configuration loads with; it travels on the result."""
        self.warnings.append(ConfigIssue(message, origin, hint, severity="warning"))


class ConfigError(Exception):
    """The configuration cannot be used; `issues` lists every reason found."""

    def __init__(self, issues: Iterable[ConfigIssue]) -> None:
        # In file order, so the list reads like the file; issues without a line first.
        self.issues: tuple[ConfigIssue, ...] = tuple(sorted(unique_issues(issues), key=_position))
        super().__init__(self._summary())

    def _summary(self) -> str:
        count = len(self.issues)
        noun = "error" if count == 1 else "errors"
        lines = [f"{count} configuration {noun}:"]
        lines.extend(f"  {issue}" for issue in self.issues)
        return "\n".join(lines)


def _position(issue: ConfigIssue) -> tuple[str, int]:
    origin = issue.origin
    if origin is None:
        return ("", 0)
    return (origin.file or "", origin.line or 0)


def unique_issues(issues: Iterable[ConfigIssue]) -> list[ConfigIssue]:
    """The issues in order, each once: a line judged for several flows is reported once."""
    seen: set[ConfigIssue] = set()
    result: list[ConfigIssue] = []
    for issue in issues:
        if issue not in seen:
            seen.add(issue)
            result.append(issue)
    return result
