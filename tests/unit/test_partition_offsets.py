"""Reading partition offsets asks again for partitions whose leader was not known."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorline import kafka
from mirrorline.kafka import KafkaOperationError, partition_offsets


class _Offset:
    def __init__(self, offset: int) -> None:
        self.offset = offset


class _Admin:
    """Answers each list_offsets request from a script: per call, partition -> error
    code; the other partitions get offset 100 + partition."""

    def __init__(self, *answers: dict[int, int]) -> None:
        self.answers = list(answers)
        self.requests: list[list[int]] = []

    def list_offsets(self, request, **_kwargs):
        script = self.answers.pop(0) if self.answers else {}
        self.requests.append(sorted(tp.partition for tp in request))
        futures = {}
        for tp in request:
            future: Future = Future()
            if tp.partition in script:
                future.set_exception(KafkaException(KafkaError(script[tp.partition])))
            else:
                future.set_result(_Offset(100 + tp.partition))
            futures[TopicPartition(tp.topic, tp.partition)] = future
        return futures


NO_LEADER = KafkaError._NOENT
NOT_LEADER = KafkaError.NOT_LEADER_FOR_PARTITION
AUTHORIZATION = KafkaError.TOPIC_AUTHORIZATION_FAILED


def _read(admin: _Admin, timeout: float = 10.0) -> dict[tuple[str, int], int]:
    return partition_offsets(
        admin, [("orders", 0), ("orders", 1)], "latest", timeout=timeout, what="west"
    )


def test_a_partition_without_a_known_leader_is_asked_again_alone():
    admin = _Admin({0: NO_LEADER}, {})

    assert _read(admin) == {("orders", 0): 100, ("orders", 1): 101}
    assert admin.requests == [[0, 1], [0]]


def test_retriable_errors_are_asked_again_too():
    admin = _Admin({1: NOT_LEADER}, {1: NOT_LEADER}, {})

    assert _read(admin) == {("orders", 0): 100, ("orders", 1): 101}
    assert admin.requests == [[0, 1], [1], [1]]


def test_other_errors_fail_at_once_naming_the_cluster_and_partition():
    admin = _Admin({1: AUTHORIZATION})

    with pytest.raises(
        KafkaOperationError, match=r"west: cannot read the latest offset of orders\[1\]"
    ):
        _read(admin)
    assert admin.requests == [[0, 1]]


def test_a_leader_that_stays_unknown_fails_once_the_retry_window_is_over(monkeypatch):
    monkeypatch.setattr(kafka, "LEADER_RETRY_S", 0.5)
    admin = _Admin(*[{0: NO_LEADER}] * 100)

    with pytest.raises(KafkaOperationError, match=r"latest offset of orders\[0\]"):
        _read(admin)
    assert 2 <= len(admin.requests) < 10


def test_a_short_timeout_bounds_the_retries():
    admin = _Admin(*[{0: NO_LEADER}] * 100)

    with pytest.raises(KafkaOperationError):
        _read(admin, timeout=0.01)
    assert len(admin.requests) <= 2


def test_the_error_names_the_partition_that_fails_for_good():
    admin = _Admin({0: NO_LEADER, 1: AUTHORIZATION})

    with pytest.raises(KafkaOperationError, match=r"latest offset of orders\[1\]"):
        _read(admin)
    assert admin.requests == [[0, 1]]
