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
