"""Help screens: an option that takes no value shows no value placeholder.

Typer's rich help prints each option's type next to its name. From Typer 0.29
it does so for flags too, so `--json` and `--help` read `--json <bool>` as if
they took a value, while click's plain help (and earlier Typer) show none.
`show_flags_without_values` restores that for every command at once: options
that take a value keep their placeholder (`--config <path>`, `--timeout
<float range>`), flags and counters show nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from typer.core import TyperOption

_MARK = "_mirrorline_flags_without_values"


def show_flags_without_values() -> None:
    """Make Typer's rich help show no value placeholder for flags (idempotent)."""
    original: Callable[[TyperOption, click.Context], str | None] | None = getattr(
        TyperOption, "display_type_rich", None
    )
    if original is None or getattr(original, _MARK, False):
        return  # a Typer without the method, or already done

    def display_type_rich(self: TyperOption, ctx: click.Context) -> str | None:
        if self.is_flag or self.count:
            return None
        return original(self, ctx)

    marked: Any = display_type_rich
    setattr(marked, _MARK, True)
    setattr(TyperOption, "display_type_rich", marked)  # noqa: B010 (a method, replaced)
