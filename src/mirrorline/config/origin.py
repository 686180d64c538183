"""Where a configuration value came from: a file and line, or a built-in default."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Origin"]


@dataclass(frozen=True)
class Origin:
    """The place that set a value.

    A value written in a file has `file`, `line` and the `key` exactly as the
    user wrote it (`us-west->us-east.topics`), so that a message can send the
    user straight to it. A value nobody wrote has no file; `label` then says
    why it exists (`default`, or `set by Mirrorline` for values Mirrorline
    always forces).
    """

    file: str | None = None
    line: int | None = None
    key: str | None = None
    label: str = "default"

    @classmethod
    def default(cls) -> Origin:
        """The origin of a built-in default value."""
        return cls()

    @classmethod
    def forced(cls) -> Origin:
        """The origin of a value Mirrorline always sets, whatever the file says."""
        return cls(label="set by Mirrorline")

    @property
    def is_default(self) -> bool:
        """True when no file set the value."""
        return self.file is None

    @property
    def where(self) -> str:
        """`file:line`, or the label for values nobody wrote."""
        if self.file is None:
            return self.label
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}"

    def __str__(self) -> str:
        if self.file is not None and self.key is not None:
            return f"{self.where} ({self.key})"
        return self.where
