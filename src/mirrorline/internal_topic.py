"""One of Mirrorline's own topics: created when needed, written acknowledged, read whole.

Progress (`engine.progress`), offset runs (`control.offset_runs`), offset
syncs (`engine.offset_syncs`), checkpoints (`control.checkpointing`) and
remote-topic metadata (`control.remote_topics`) each keep their records in a
topic of one partition and use it the same way:

- `ensure()` creates it, with its own configuration (compacted, or retained
  for a time), unless it exists, and creates its writer unless it has a
  transactional id (creating that one fences: `open()`). An idempotent
  librdkafka producer waits about half a second for its producer id before
  its first write; created here, it has the id by the time it writes;
- `write(records)` appends (key, value) pairs to partition 0 and returns once
  every one is acknowledged (idempotent, `acks=all`; with a transactional id,
  one transaction per call, and `open()` fences every earlier writer);
- `read()` reads it from its start up to its end as of the call, at start-up.

Each store keeps only what is particular to it: its record format.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from confluent_kafka import Message

from mirrorline.acked_writer import AckedWriter
from mirrorline.kafka import ClusterClients, ensure_topic, read_to_end

# Compacted topics: one record per key survives, and at once.
COMPACTED: Mapping[str, str] = {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"}


class InternalTopic:
    """A one-partition internal topic on the cluster `clients` reach."""

    def __init__(
        self,
        name: str,
        clients: ClusterClients,
        *,
        what: str,
        config: Mapping[str, str],
        replication_factor: int = -1,
        transactional_id: str | None = None,
        read_committed: bool = False,
    ) -> None:
        """`what` names the records in errors (`flow a->b: progress`); `read_committed`
        hides the records of transactions that were not committed."""
        self.name = name
        self.clients = clients
        self._config = dict(config)
        self._replication_factor = replication_factor
        self._read_committed = read_committed
        self._transactional = transactional_id is not None
        self._writer = AckedWriter(
            clients.producer_settings, what, transactional_id=transactional_id
        )

    def ensure(self, timeout: float = 30.0) -> bool:
        """Create the topic unless it exists, and its writer unless it is transactional;
        True when this call created the topic."""
        created = ensure_topic(
            self.clients.admin,
            self.name,
            partitions=1,
            replication_factor=self._replication_factor,
            config=self._config,
            timeout=timeout,
        )
        if not self._transactional:
            self._writer.open(timeout)
        return created

    def open(self, timeout: float = 60.0) -> None:
        """Create the producer now: with a transactional id, earlier writers are fenced."""
        self._writer.open(timeout)

    def write(self, records: Iterable[tuple[bytes, bytes | None]], timeout: float = 60.0) -> int:
        """Append the records in order and wait for every acknowledgement; the count."""
        return self._writer.write(self.name, records, partition=0, timeout=timeout)

    def read(self, *, missing_ok: bool = False, timeout: float = 60.0) -> Iterator[Message]:
        """The topic's records from its start to its end as of the call (see `read_to_end`)."""
        return read_to_end(
            self.clients.consumer_settings,
            self.name,
            read_committed=self._read_committed,
            missing_ok=missing_ok,
            timeout=timeout,
        )

    def close(self) -> None:
        """Release the producer; the cluster's clients are closed by their owner."""
        self._writer.close()
