"""How much the `mirrorline` commands log, and in which form.

`mirrorline --log-level LEVEL <command>`: long-running roles (driver, service) log
at INFO unless a level was chosen; other commands stay quiet (warnings only)
unless one was. At DEBUG Spark's own log goes from WARN to INFO (its DEBUG output
is for Spark's developers and can be had with a log4j configuration of one's own).
librdkafka's debug contexts are a client setting: `debug = security,broker` in the
properties file.

`mirrorline --log-format json <command>`: one JSON object per line (time, level,
logger, flow, message, and exception when there is one), for log shippers; the
driver then also prints its status lines as log records, and Spark's JVM logs in
the same shape (`engine.session`). The long-running roles also pass their whole
standard error through `funnel_stderr`, so that what other code writes there
directly (librdkafka's C logger, the Java launcher, a crash's traceback) reaches
the shipper as JSON too.

No level and no form prints a secret: settings are redacted wherever they are
shown, and libraries that trace their wire protocol at DEBUG (py4j, which carries
the settings to Spark's JVM) are kept at INFO.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
import time

__all__ = [
    "FORMATS", "LEVELS", "JsonFormatter", "choose", "choose_format", "configure",
    "funnel_stderr", "is_json", "spark_level",
]  # fmt: skip

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Loggers that trace a protocol's every message at DEBUG: py4j logs each command
# sent to Spark's JVM, settings and passwords included, and at INFO each call back. They
# never go below WARNING.
_WIRE_TRACES = ("py4j",)

_chosen: int | None = None
_json = False


def choose(name: str) -> None:
    """Use level `name` (one of `LEVELS`) for this command, from now on."""
    global _chosen
    _chosen = getattr(logging, name.upper())
    _basic(_chosen)


def choose_format(name: str) -> None:
    """Log in form `name` (one of `FORMATS`); call before `choose` and `configure`."""
    global _json
    _json = name == "json"


def is_json() -> bool:
    return _json


def configure(default: int) -> None:
    """Log at `default` unless a level was chosen on the command line."""
    if _chosen is None:
        _basic(default)


def _basic(level: int) -> None:
    # Not forced: a process that set up logging itself (a test runner) keeps its handlers.
    if _json:
        handler = logging.StreamHandler()
        handler.setFormatter(JsonFormatter())
        logging.basicConfig(level=level, handlers=[handler])
    else:
        logging.basicConfig(level=level, format=FORMAT)
    for name in _WIRE_TRACES:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON: time (UTC, ISO 8601), level, logger, flow, message."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "flow": _flow_of(record),
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def _flow_of(record: logging.LogRecord) -> str | None:
    """The flow a record is about: its `flow` extra, a message starting "flow %s", or
    the flow's own thread (named "flow <name>")."""
    flow = getattr(record, "flow", None)
    if flow:
        return str(flow)
    if isinstance(record.msg, str) and record.msg.startswith("flow %s") and record.args:
        args = record.args if isinstance(record.args, tuple) else (record.args,)
        return str(args[0])
    if record.threadName and record.threadName.startswith("flow "):
        return record.threadName.removeprefix("flow ")
    return None


def spark_level() -> str:
    """The level of Spark's own log: WARN, or INFO when Mirrorline logs at DEBUG."""
    return "INFO" if _chosen is not None and _chosen <= logging.DEBUG else "WARN"


def funnel_stderr() -> None:
    """From now on, every line written to this process's standard error (file
    descriptor 2, which child processes inherit) leaves it as one JSON object.

    Lines that are JSON objects already (Mirrorline's records, Spark's JVM log) pass
    as they are; any other line becomes a record of logger `stderr`, at WARNING.
    A thread copies the lines from a pipe to the real standard error; at exit it
    drains what was written until then.
    """
    real = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)  # sys.stderr writes to descriptor 2, so to the pipe now
    pump = threading.Thread(target=_pump, args=(read_end, real), name="stderr funnel", daemon=True)
    pump.start()

    def drain() -> None:
        sys.stderr.flush()
        os.dup2(real, 2)  # this process's end of the pipe closes; children may hold theirs
        pump.join(2.0)

    atexit.register(drain)


def _pump(read_end: int, real: int) -> None:
    formatter = JsonFormatter()
    with open(read_end, "rb") as lines, open(real, "wb", buffering=0) as out:
        for raw in lines:
            text = raw.decode(errors="replace").rstrip("\n")
            if not text.strip():
                continue
            if not (text.startswith("{") and text.endswith("}")):
                record = logging.LogRecord("stderr", logging.WARNING, "", 0, text, None, None)
                text = formatter.format(record)
            out.write(text.encode() + b"\n")
