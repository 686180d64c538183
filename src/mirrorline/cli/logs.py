"""How much the `mirrorline` commands log: `mirrorline --log-level LEVEL <command>`.

Long-running roles (driver, service) log at INFO unless a level was chosen;
other commands stay quiet (warnings only) unless one was. At DEBUG Spark's own
log goes from WARN to INFO (its DEBUG output is for Spark's developers and
can be had with a log4j configuration of one's own). librdkafka's debug
contexts are a client setting: `debug = security,broker` in the properties
file. No level prints a secret: settings are redacted wherever they are shown,
and libraries that trace their wire protocol at DEBUG (py4j, which carries the
settings to Spark's JVM) are kept at INFO.
"""

from __future__ import annotations

import logging

__all__ = ["LEVELS", "choose", "configure", "spark_level"]

LEVELS = ("debug", "info", "warning", "error")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Loggers that trace a protocol's every message at DEBUG: py4j logs each command
# sent to Spark's JVM, settings and passwords included. They never go below INFO.
_WIRE_TRACES = ("py4j",)

_chosen: int | None = None


def choose(name: str) -> None:
    """Use level `name` (one of `LEVELS`) for this command, from now on."""
    global _chosen
    _chosen = getattr(logging, name.upper())
    _basic(_chosen)


def configure(default: int) -> None:
    """Log at `default` unless a level was chosen on the command line."""
    if _chosen is None:
        _basic(default)


def _basic(level: int) -> None:
    # Not forced: a process that set up logging itself (a test runner) keeps its handlers.
    logging.basicConfig(level=level, format=FORMAT)
    for name in _WIRE_TRACES:
        logging.getLogger(name).setLevel(max(level, logging.INFO))


def spark_level() -> str:
    """The level of Spark's own log: WARN, or INFO when Mirrorline logs at DEBUG."""
    return "INFO" if _chosen is not None and _chosen <= logging.DEBUG else "WARN"
