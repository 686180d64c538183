"""`mirrorline.kafka.asked_until_answered`: which Kafka errors are asked again, and until when."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirrorline.kafka import KafkaOperationError, asked_until_answered


def _failing(errors: list[KafkaError], answer: str = "answer"):
    """An `ask` that raises `errors` in turn, then answers; it records what it was given."""
    given: list[float] = []

    def ask(seconds: float) -> str:
        given.append(seconds)
        if errors:
            raise KafkaException(errors.pop(0))
        return answer

    return ask, given


def test_a_loading_coordinator_and_retriable_errors_are_asked_again():
    ask, given = _failing(
        [
            KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS),
            KafkaError(KafkaError.REQUEST_TIMED_OUT, retriable=True),
        ]
    )
    assert asked_until_answered("cannot read it", ask, timeout=30) == "answer"
    assert len(given) == 3
    assert all(1.0 <= seconds <= 30 for seconds in given)


def test_any_other_error_is_reported_at_once_naming_what_failed():
    ask, given = _failing([KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED)])
    with pytest.raises(KafkaOperationError) as raised:
        asked_until_answered("cannot read group g1", ask, timeout=30)
    assert str(raised.value) == "cannot read group g1: Broker: Group authorization failed"
    assert len(given) == 1


def test_a_coordinator_still_loading_at_the_deadline_is_reported():
    ask, given = _failing([KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)] * 1000)
    with pytest.raises(
        KafkaOperationError, match="^cannot read group g1: Broker: Coordinator load"
    ):
        asked_until_answered("cannot read group g1", ask, timeout=0.5)
    assert 2 <= len(given) < 1000
