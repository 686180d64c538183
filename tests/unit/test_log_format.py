"""`--log-format json`: one JSON object per record, with the flow it is about."""

from __future__ import annotations

import json
import logging
import sys

from typer.testing import CliRunner

from mirrorline.cli.logs import JsonFormatter
from mirrorline.cli.main import app


def _record(msg: str, *args: object, thread: str = "MainThread", **extra: object):
    record = logging.LogRecord(
        "mirrorline.engine.flow", logging.WARNING, "f.py", 1, msg, args, None
    )
    record.threadName = thread
    record.__dict__.update(extra)
    return record


def _formatted(record: logging.LogRecord) -> dict:
    line = JsonFormatter().format(record)
    assert "\n" not in line
    return json.loads(line)


def test_a_record_has_time_level_logger_flow_and_message():
    entry = _formatted(_record("flow %s failed: %s", "east->west", "broker down"))
    assert entry.keys() == {"time", "level", "logger", "flow", "message"}
    assert entry["level"] == "WARNING"
    assert entry["logger"] == "mirrorline.engine.flow"
    assert entry["flow"] == "east->west"
    assert entry["message"] == "flow east->west failed: broker down"
    assert entry["time"].endswith("Z") and "T" in entry["time"]


def test_the_flow_comes_from_an_extra_or_the_flows_thread_or_is_null():
    assert _formatted(_record("stopping", flow="a->b"))["flow"] == "a->b"
    assert _formatted(_record("a batch", thread="flow c->d"))["flow"] == "c->d"
    assert _formatted(_record("driver stopped"))["flow"] is None


def test_an_exception_is_one_field_of_the_same_line():
    try:
        raise ValueError("bad value")
    except ValueError:
        record = _record("it failed")
        record.exc_info = sys.exc_info()
    entry = _formatted(record)
    assert "ValueError: bad value" in entry["exception"]


def test_an_unknown_format_is_a_usage_error():
    result = CliRunner().invoke(app, ["--log-format", "xml", "status", "--help"])
    assert result.exit_code == 2
    assert "use one of text, json" in result.output
    assert "Traceback" not in result.output
