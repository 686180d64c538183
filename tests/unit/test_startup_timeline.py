"""A flow's start-up steps, in seconds since the driver process started, logged once."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from mirrorline.engine import startup
from mirrorline.engine.startup import FIRST_BATCH, LEADS, QUERY_STARTED, StartupTimeline


def test_the_process_age_counts_from_the_process_start_not_from_the_import():
    code = (
        "import time; time.sleep(1.5); "
        "from mirrorline.engine.startup import process_age; print(process_age())"
    )
    age = float(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    assert 1.4 < age < 30.0


def test_each_step_keeps_its_first_time_and_the_first_batch_logs_the_timeline(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    now = iter([2.0, 3.0, 5.0, 11.0])
    monkeypatch.setattr(startup, "process_age", lambda: next(now))
    monkeypatch.setattr(startup, "_shared", {})
    startup.driver_step(startup.SPARK_SESSION)  # 2.0
    timeline = StartupTimeline("a->b")
    timeline.reached(LEADS)  # 3.0
    timeline.reached(QUERY_STARTED)  # 5.0
    timeline.reached(LEADS)  # a new term later: kept at 3.0, no time taken
    assert "first records" not in timeline.describe()
    with caplog.at_level(logging.INFO, logger="mirrorline.engine.startup"):
        timeline.reached(FIRST_BATCH)  # 11.0
        timeline.reached(FIRST_BATCH)  # once
    assert [r.getMessage() for r in caplog.records] == [
        "flow a->b: first records copied 11.0 s after the driver process started: "
        "Spark session 2.0 s, leads 3.0 s, query started 5.0 s, first batch committed 11.0 s"
    ]
