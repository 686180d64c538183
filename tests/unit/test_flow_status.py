"""Pure helpers of the flow runner: loop schedules, error summaries, outages, retries."""

from __future__ import annotations

import pytest

from mirrorline.engine.flow import retry_due
from mirrorline.engine.health import ClusterVerdict
from mirrorline.engine.schedule import Due, Scheduler
from mirrorline.engine.status import summarise, with_outages


def test_loop_runs_at_start_then_every_interval():
    due = Due(interval=10.0)
    assert due.take(100.0)
    assert not due.take(105.0)
    assert due.take(110.0)
    assert not due.take(119.9)


def test_a_late_run_does_not_make_the_later_ones_late():
    due = Due(interval=1.0)
    assert due.take(100.0)
    assert due.take(101.4)  # looked at late
    assert not due.take(101.9) and due.take(102.0)  # still on the second
    assert due.take(105.5)  # more than an interval late: on from now
    assert not due.take(106.4) and due.take(106.5)


def test_the_flow_waits_until_the_next_loop_falls_due():
    loops = Scheduler("a->b")
    loops.every("rounds", 1.0, lambda: None, stage="s")
    loops.every("at every look", 0.0, lambda: None, stage="s")
    loops.every("elsewhere", 0.2, lambda: None, stage="t")
    assert loops.wait_s(10.0, 0.5) == 0.5  # nothing ran yet: all due, none ahead
    loops.run("s", 10.0)
    assert loops.wait_s(10.6, 0.5) == pytest.approx(0.4)
    assert loops.wait_s(10.0, 0.5) == 0.5
    loops.run("t", 10.0)
    assert loops.wait_s(10.1, 0.5) == pytest.approx(0.1)


def test_disabled_loop_runs_once_at_start():
    due = Due(interval=None)
    assert due.take(0.5)
    assert not due.take(1e9)


def test_a_failed_loop_is_tried_again_soon_with_a_growing_delay():
    due = Due(interval=600.0)
    assert due.take(0.0)
    due.outcome(False, 0.0)
    assert not due.take(0.9) and due.take(1.0)
    due.outcome(False, 1.0)
    assert not due.take(2.9) and due.take(3.0)
    due.outcome(True, 3.0)
    assert not due.take(602.9) and due.take(603.0)  # back to its interval
    once = Due(interval=None)
    assert once.take(0.0)
    once.outcome(False, 0.0)
    assert once.take(1.0)  # a run-once loop that failed runs again
    for failures in range(1, 10):
        once.outcome(False, 100.0 * failures)
        assert once.take(100.0 * failures + 60.0)  # never more than a minute


def test_loops_run_by_stage_in_order_and_keep_their_latest_error():
    ran: list[str] = []
    loops = Scheduler("a->b")
    loops.every("first", 10.0, lambda: ran.append("first"), stage="one")
    loops.every("broken", 10.0, lambda: 1 / 0, stage="one")
    loops.every("later", None, lambda: ran.append("later"), stage="two")
    loops.run("one", 0.0)
    assert ran == ["first"]
    assert loops.errors() == {"broken": "division by zero"}
    loops.run("two", 0.0)
    loops.run("two", 100.0)  # no interval: once, at start
    assert ran == ["first", "later"]
    loops.run("one", 0.5)  # not due yet, the broken loop neither
    assert ran == ["first", "later"]
    loops.run("one", 1.0)  # only the broken one is tried again
    assert ran == ["first", "later"]
    # A loop that succeeds again clears its error.
    loops.guard("broken", lambda: None)
    assert loops.errors() == {}


def test_a_loop_whose_action_did_not_finish_runs_again_soon_without_an_error():
    results = [False, True]
    loops = Scheduler("a->b")
    loops.every("topic config sync", 600.0, lambda: results.pop(0), stage="one")
    loops.run("one", 0.0)
    assert loops.errors() == {} and results == [True]  # its problems are its own to report
    loops.run("one", 0.9)
    assert results == [True]
    loops.run("one", 1.0)  # tried again after a second
    assert results == []
    loops.run("one", 600.9)  # then back to its interval: not due before 601
    assert loops.errors() == {}


def test_summary_prefers_mirrorline_message_inside_spark_error():
    error = (
        "py4j.protocol.Py4JJavaError: An error occurred while calling "
        "z:io.mirrorline.writer.BatchWriter.write.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage "
        "3.0 failed 1 times, most recent failure: Lost task 0.0 in stage 3.0 (TID 7): "
        "io.mirrorline.writer.DeliveryFailed: flow a->b: a.t[0] refused the record from "
        "source offset 7: Broker: Message size too large\n"
        "\tat io.mirrorline.writer.Copies.refusedOrRaise(Copies.java:71)\n"
    )
    assert summarise(error) == (
        "flow a->b: a.t[0] refused the record from source offset 7: Broker: Message size too large"
    )


def test_summary_of_other_errors_is_their_first_line():
    assert summarise("KafkaError{code=_TRANSPORT}\nmore") == "KafkaError{code=_TRANSPORT}"
    assert summarise("") == "unknown error"


def test_an_unreachable_cluster_shows_in_a_running_flow():
    fine = ClusterVerdict("east", "source", True)
    down = ClusterVerdict("west", "target", False, "Connect to ipv4#127.0.0.1:9 failed")
    assert with_outages("running", "", (fine, fine)) == ("running", "")
    state, reason = with_outages("running", "", (fine, down))
    assert state == "degraded"
    assert reason.startswith("target cluster west unreachable: Connect to ipv4#127.0.0.1:9 failed")
    state, reason = with_outages("failed", "progress not written (retrying in 5s)", (fine, down))
    assert state == "failed"
    assert "target cluster west unreachable" in reason
    assert "progress not written" in reason
    assert with_outages("starting", "", (down,))[0] == "starting"
    assert with_outages("stopped", "stopped by the operator", (down,)) == (
        "stopped",
        "stopped by the operator",
    )


def test_a_flow_that_failed_in_an_outage_retries_as_soon_as_the_clusters_answer():
    # Another failure (a refused record): the whole backoff, whatever the clusters do.
    assert not retry_due(10.0, retry_at=40.0, failed_in_outage=False, clusters_down=False)
    assert retry_due(40.0, retry_at=40.0, failed_in_outage=False, clusters_down=False)
    # Failed during an outage: not before the backoff while a cluster is still down...
    assert not retry_due(10.0, retry_at=40.0, failed_in_outage=True, clusters_down=True)
    assert retry_due(40.0, retry_at=40.0, failed_in_outage=True, clusters_down=True)
    # ...and at once when every cluster answers again.
    assert retry_due(10.0, retry_at=40.0, failed_in_outage=True, clusters_down=False)
