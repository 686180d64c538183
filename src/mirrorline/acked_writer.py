"""Mirrorline's writer of its own records: every record acknowledged before a write returns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from mirrorline.kafka import KafkaOperationError


class AckedWriter:
    """Writes small batches of records and returns only once every one is acknowledged.

    For Mirrorline's own records (progress, offset syncs): idempotent, `acks=all`,
    and an error names what was being written. The producer is created on first
    use and kept for the next batches.

    With a `transactional_id`, each `write` is one transaction, and creating the
    producer fences every earlier producer with the same id: a writer that has
    been replaced (an old driver that lost its flow) can no longer write.
    """

    def __init__(
        self,
        producer_settings: Mapping[str, object],
        what: str,
        *,
        transactional_id: str | None = None,
    ) -> None:
        self._settings = {
            **producer_settings,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
        }
        if transactional_id is not None:
            self._settings["transactional.id"] = transactional_id
        self._transactional = transactional_id is not None
        self._what = what
        self._producer: Producer | None = None

    def write(
        self,
        topic: str,
        records: Iterable[tuple[bytes, bytes | None]],
        *,
        partition: int | None = None,
        timeout: float = 60.0,
    ) -> int:
        """Produce (key, value) pairs in order; the count, or KafkaOperationError."""
        try:
            return self._write(topic, records, partition, timeout)
        except KafkaException as exc:
            # Fenced, or the transaction failed: a later write starts with a new producer.
            self._producer = None
            raise KafkaOperationError(
                f"{self._what} not written to {topic}: {exc.args[0].str()}"
            ) from None

    def open(self, timeout: float = 60.0) -> None:
        """Create the producer now; with a transactional id, fence earlier writers now.

        Without one it returns at once. librdkafka asks for the idempotent producer's
        id in the background and only after about half a second (its retry timer
        starts before the first broker connection is up); every write waits for
        that id, so a writer created early enough writes its first records at once.
        """
        try:
            self._open(timeout)
        except KafkaException as exc:
            raise KafkaOperationError(f"{self._what}: {exc.args[0].str()}") from None

    def _open(self, timeout: float) -> Producer:
        if self._producer is None:
            producer = Producer(self._settings)
            if self._transactional:
                producer.init_transactions(timeout)
            self._producer = producer
        return self._producer

    def _write(
        self,
        topic: str,
        records: Iterable[tuple[bytes, bytes | None]],
        partition: int | None,
        timeout: float,
    ) -> int:
        producer = self._open(timeout)
        if self._transactional:
            producer.begin_transaction()
        errors: list[str] = []

        def delivered(error: KafkaError | None, _msg: Message) -> None:
            if error is not None:
                errors.append(error.str())

        # -1: librdkafka's partitioner chooses (the default when none is given).
        number = partition if partition is not None else -1
        count = 0
        for key, value in records:
            producer.produce(topic, key=key, value=value, partition=number, on_delivery=delivered)
            count += 1
        remaining = producer.flush(timeout)
        if remaining or errors:
            detail = errors[0] if errors else f"{remaining} records unacknowledged"
            if self._transactional:
                self._producer = None  # its transaction is left to be aborted by the next one
            raise KafkaOperationError(f"{self._what} not written to {topic}: {detail}")
        if self._transactional:
            producer.commit_transaction(timeout)
        return count

    def close(self, timeout: float = 5.0) -> None:
        """Release the producer; what is unacknowledged by then is left to a replay."""
        if self._producer is not None:
            self._producer.flush(timeout)
            self._producer = None
