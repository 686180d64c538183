"""Where Mirrorline keeps files of its own on the operator's machine.

Under the XDG base directories' state home, whatever the current directory:
`$XDG_STATE_HOME/mirrorline/<name>`, or `~/.local/state/mirrorline/<name>`
when XDG_STATE_HOME is unset or not absolute (the XDG rules call a relative
one invalid). The driver keeps Spark's checkpoints there (`driver`), the
failover commands their state files (`failover`). Jars fetched from Maven
Central go to the cache home instead (`cache_dir`): they can be fetched again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def state_dir(name: str, environ: Mapping[str, str] | None = None) -> Path:
    """Mirrorline's state directory `name` (see the module); not created here."""
    env = os.environ if environ is None else environ
    home = env.get("XDG_STATE_HOME", "")
    base = Path(home) if home and Path(home).is_absolute() else Path.home() / ".local" / "state"
    return base / "mirrorline" / name


def cache_dir(name: str, environ: Mapping[str, str] | None = None) -> Path:
    """Mirrorline's cache directory `name`: `$XDG_CACHE_HOME/mirrorline/<name>`, or
    `~/.cache/mirrorline/<name>` (same rules as `state_dir`); not created here."""
    env = os.environ if environ is None else environ
    home = env.get("XDG_CACHE_HOME", "")
    base = Path(home) if home and Path(home).is_absolute() else Path.home() / ".cache"
    return base / "mirrorline" / name
