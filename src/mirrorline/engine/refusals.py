"""Records the target refuses: which errors count as a refusal, and the dead-letter copy.

A refusal is the target's final "no" to one record: too large for the topic,
invalid, not allowed. Timeouts and unreachable brokers are not refusals: they
say nothing about the record, so they fail the batch and it is written again
later. With `errors.tolerance = none` (the default) a refusal stops the flow;
with `all` the record is skipped, counted and, when
`errors.deadletterqueue.topic.name` is set, written to that topic on the target
with headers that say where it came from and why it was refused.

Dead-letter headers (all values UTF-8 strings), after the record's own headers:

- ``mirrorline.error.flow``: the flow, e.g. ``east->west``;
- ``mirrorline.error.topic``, ``mirrorline.error.partition``,
  ``mirrorline.error.offset``: where the record is in the source cluster;
- ``mirrorline.error.target.topic``: the topic that refused it;
- ``mirrorline.error.code`` and ``mirrorline.error.message``: the error, as the
  Kafka client reported it;
- ``mirrorline.error.timestamp``: when it was refused (epoch milliseconds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import KafkaError

# Errors about the connection or the client's own state, not about the record.
_NOT_ABOUT_THE_RECORD = {
    KafkaError._MSG_TIMED_OUT,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._DESTROY,
    KafkaError._FENCED,
    KafkaError._STATE,
    KafkaError._PURGE_QUEUE,
    KafkaError._PURGE_INFLIGHT,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC,
}
# Refusals of one record that librdkafka does not mark as non-retriable everywhere.
_ALWAYS_REFUSALS = {
    KafkaError.MSG_SIZE_TOO_LARGE,  # also librdkafka's own check against message.max.bytes
    KafkaError.INVALID_RECORD,
    KafkaError.INVALID_MSG,  # Kafka's CORRUPT_MESSAGE
    KafkaError.INVALID_MSG_SIZE,
    KafkaError.RECORD_LIST_TOO_LARGE,
    KafkaError.INVALID_TIMESTAMP,
    KafkaError.POLICY_VIOLATION,
}


def is_refusal(error: KafkaError) -> bool:
    """True when `error` rejects this record for good (skippable under errors.tolerance=all)."""
    code = error.code()
    if code in _ALWAYS_REFUSALS:
        return True
    if code in _NOT_ABOUT_THE_RECORD or error.fatal() or error.retriable():
        return False
    return code > 0  # a broker's non-retriable answer to this produce request


@dataclass(frozen=True)
class Refusal:
    """One record the target refused, with enough context to find it and say why."""

    topic: str  # source topic
    partition: int
    offset: int
    target_topic: str
    code: str
    message: str

    def describe(self) -> str:
        return (
            f"{self.target_topic}[{self.partition}] refused the record from source offset "
            f"{self.offset}: {self.message}"
        )

    def headers(self, flow: str) -> list[tuple[str, bytes]]:
        return [
            (name, value.encode())
            for name, value in (
                ("mirrorline.error.flow", flow),
                ("mirrorline.error.topic", self.topic),
                ("mirrorline.error.partition", str(self.partition)),
                ("mirrorline.error.offset", str(self.offset)),
                ("mirrorline.error.target.topic", self.target_topic),
                ("mirrorline.error.code", self.code),
                ("mirrorline.error.message", self.message),
                ("mirrorline.error.timestamp", str(int(time.time() * 1000))),
            )
        ]


def refusal(topic: str, partition: int, offset: int, target_topic: str, error: KafkaError):
    return Refusal(topic, partition, offset, target_topic, error.name(), error.str())
