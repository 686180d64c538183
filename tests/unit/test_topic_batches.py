"""Remote topics are created in requests a KRaft controller accepts, in their order."""

from __future__ import annotations

from confluent_kafka.admin import NewTopic

from mirrorline.control.topics import _batches


def _topics(*partitions: int) -> list[tuple[str, NewTopic]]:
    return [(f"t{i}", NewTopic(f"east.t{i}", num_partitions=n)) for i, n in enumerate(partitions)]


def _sizes(batches: list[list[tuple[str, NewTopic]]]) -> list[list[int]]:
    return [[topic.num_partitions for _, topic in batch] for batch in batches]


def test_topics_share_a_request_up_to_the_partition_limit():
    assert _sizes(_batches(_topics(10, 10, 10, 10, 10), 25)) == [[10, 10], [10, 10], [10]]


def test_a_topic_larger_than_the_limit_goes_alone():
    assert _sizes(_batches(_topics(3, 40, 3), 25)) == [[3], [40], [3]]


def test_order_is_kept_and_nothing_is_lost():
    topics = _topics(*range(1, 30))
    batched = [name for batch in _batches(topics, 50) for name, _ in batch]
    assert batched == [name for name, _ in topics]


def test_no_topics_no_request():
    assert _batches([], 5000) == []
