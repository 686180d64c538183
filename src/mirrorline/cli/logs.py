"""How much the `mirrorline` commands log: `mirrorline --log-level LEVEL <command>`.

Long-running roles (driver, service) log at INFO unless a level was chosen;
other commands stay quiet (warnings only) unless one was. At DEBUG Spark's own
log goes from WARN to INFO (its DEBUG output is for Spark's developers and
can be had with a log4j configuration of one's own). librdkafka's debug
contexts are a client setting: `debug = security,broker` in the properties
file. No level prints a secret: settings are redacted wherever they are shown.
"""

from __future__ import annotations

import logging

__all__ = ["LEVELS", "choose", "configure", "spark_level"]

LEVELS = ("debug", "info", "warning", "error")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_chosen: int | None = None


def choose(name: str) -> None:
    """Use level `name` (one of `LEVELS`) for this command, from now on."""
    global _chosen
    _chosen = getattr(logging, name.upper())
    logging.basicConfig(level=_chosen, format=FORMAT, force=True)


def configure(default: int) -> None:
    """Log at `default` unless a level was chosen on the command line."""
    if _chosen is None:
        logging.basicConfig(level=default, format=FORMAT, force=True)


def spark_level() -> str:
    """The level of Spark's own log: WARN, or INFO when Mirrorline logs at DEBUG."""
    return "INFO" if _chosen is not None and _chosen <= logging.DEBUG else "WARN"
