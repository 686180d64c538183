"""Flows wait for the driver's Spark session only when they start their queries."""

from __future__ import annotations

import threading

import pytest

from mirrorline.engine.spark_promise import SparkPromise, SparkUnavailable


def test_a_waiting_flow_gets_the_session_once_it_is_built():
    promise = SparkPromise()
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(promise.get()))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and got == []  # still starting
    session = object()
    promise.fulfil(session)  # type: ignore[arg-type]
    waiter.join(5)
    assert got == [session]
    assert SparkPromise(session).get() is session  # type: ignore[arg-type]


def test_a_session_that_cannot_be_built_ends_every_wait_with_the_reason():
    promise = SparkPromise()
    promise.fail("no java executable found")
    with pytest.raises(SparkUnavailable, match="Spark could not be started: no java"):
        promise.get()
