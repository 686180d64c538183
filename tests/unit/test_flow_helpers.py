"""Pure helpers of the flow runner: loop schedules and error summaries."""

from __future__ import annotations

from mirrorline.engine.flow import _Due, _summarise


def test_loop_runs_at_start_then_every_interval():
    due = _Due(interval=10.0)
    assert due.take(100.0)
    assert not due.take(105.0)
    assert due.take(110.0)
    assert not due.take(119.9)


def test_disabled_loop_runs_once_at_start():
    due = _Due(interval=None)
    assert due.take(0.5)
    assert not due.take(1e9)


def test_summary_prefers_mirrorline_message_inside_spark_error():
    error = (
        "py4j.protocol.Py4JJavaError: An error occurred while calling o1.collectToPython.\n"
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "writer.py", line 90, in write_batches\n'
        "mirrorline.engine.writer.DeliveryFailed: flow a->b: a.t[0] refused the record from "
        "source offset 7: Broker: Message size too large\n"
        "\tat org.apache.spark.api.python.BasePythonRunner...\n"
    )
    assert _summarise(error) == (
        "flow a->b: a.t[0] refused the record from source offset 7: Broker: Message size too large"
    )


def test_summary_of_other_errors_is_their_first_line():
    assert _summarise("KafkaError{code=_TRANSPORT}\nmore") == "KafkaError{code=_TRANSPORT}"
    assert _summarise("") == "unknown error"


def test_an_unreachable_cluster_shows_in_a_running_flow():
    from mirrorline.engine.flow import _with_outages
    from mirrorline.engine.health import ClusterVerdict

    fine = ClusterVerdict("east", "source", True)
    down = ClusterVerdict("west", "target", False, "Connect to ipv4#127.0.0.1:9 failed")
    assert _with_outages("running", "", (fine, fine)) == ("running", "")
    state, reason = _with_outages("running", "", (fine, down))
    assert state == "degraded"
    assert reason.startswith("target cluster west unreachable: Connect to ipv4#127.0.0.1:9 failed")
    state, reason = _with_outages("failed", "progress not written (retrying in 5s)", (fine, down))
    assert state == "failed"
    assert "target cluster west unreachable" in reason
    assert "progress not written" in reason
    assert _with_outages("starting", "", (down,))[0] == "starting"
    assert _with_outages("stopped", "stopped by the operator", (down,)) == (
        "stopped",
        "stopped by the operator",
    )


def test_a_flow_that_failed_in_an_outage_retries_as_soon_as_the_clusters_answer():
    from mirrorline.engine.flow import _retry_due

    # Another failure (a refused record): the whole backoff, whatever the clusters do.
    assert not _retry_due(10.0, retry_at=40.0, failed_in_outage=False, clusters_down=False)
    assert _retry_due(40.0, retry_at=40.0, failed_in_outage=False, clusters_down=False)
    # Failed during an outage: not before the backoff while a cluster is still down...
    assert not _retry_due(10.0, retry_at=40.0, failed_in_outage=True, clusters_down=True)
    assert _retry_due(40.0, retry_at=40.0, failed_in_outage=True, clusters_down=True)
    # ...and at once when every cluster answers again.
    assert _retry_due(10.0, retry_at=40.0, failed_in_outage=True, clusters_down=False)
