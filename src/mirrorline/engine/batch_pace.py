"""How many source records each micro-batch of a flow may read.

Every micro-batch costs a fixed time besides its records: the driver's offset
queries and planning, the tasks' launch, their last fetches and
acknowledgements. That is about 0.2 s on loopback and grows with each round trip
to a far cluster, so a backlog moves fastest in large batches. A batch is also
the unit of the flow's bookkeeping: its offset syncs, progress and metrics are
written when it ends, and a crash replays it. So batches are sized by time, not
by a count of records, and not by `max.poll.records`, which keeps its Kafka
meaning for the source consumers (records per poll).

The protocol: before each batch, Spark's Kafka source plans the batch's end
offsets under `limit` records in all (`jvm/writer` `PacedKafkaSource`); after
it, `observe(records, seconds)` turns what the batch moved into the next limit,
the records the flow moved per second times `micro-batch.duration.ms`. On a
backlog, batches settle at about that duration whatever the record size, the
distance or the cost of the target. A batch that found less than its limit
measured the arrival rate rather than the flow's capacity: its lower next limit
does not bind while the flow keeps up, and when a backlog forms each full batch
measures the capacity again (a batch that took a tenth of the duration allows
ten times its records next). The limit never falls below `FLOOR_PER_PARTITION`
records per source partition, so that no batch's per-task costs are spent on a
few records each, and never rises above `micro-batch.max.records` when that is
set (a bound on what one crash replays).
"""

from __future__ import annotations

import time

from mirrorline.config.flow_settings import PaceSettings

__all__ = ["PACED_SOURCE", "BatchPace", "PacedQuery"]

# Spark's Kafka source under a read limit that the driver sets (`jvm/writer`).
PACED_SOURCE = "io.mirrorline.writer.PacedKafkaSource"
PACE_OPTION = "mirrorline.pace"

# The least a batch may read per source partition: about two of Kafka's default polls.
FLOOR_PER_PARTITION = 1_000
# The first batch's limit, before anything is measured: a fraction of a second here.
FIRST_RECORDS = 100_000


class BatchPace:
    """The records limit of a flow's next micro-batch (see the module's docstring)."""

    def __init__(self, settings: PaceSettings, partitions: int) -> None:
        self._settings = settings
        self._floor = self._bounded(FLOOR_PER_PARTITION * max(1, partitions))
        self._limit = self._bounded(max(self._floor, FIRST_RECORDS))

    @property
    def limit(self) -> int:
        """The most source records the next batch reads, over all its partitions."""
        return self._limit

    def observe(self, records: int, seconds: float) -> int:
        """A batch read `records` source offsets in `seconds` (its whole cycle);
        returns the next batch's limit."""
        if records > 0 and seconds > 0:
            rate = records / seconds
            self._limit = self._bounded(max(self._floor, round(rate * self._settings.duration_s)))
        return self._limit

    def _bounded(self, records: int) -> int:
        most = self._settings.max_records
        return max(1, records if most is None else min(records, most))


class PacedQuery:
    """One streaming query's pace, kept in the driver's JVM where Spark plans its batches.

    Built before the query starts (it sets the first limit); `batch_done` after
    each batch sets the next one; `close` when the query has stopped.
    """

    def __init__(self, spark, name: str, settings: PaceSettings, partitions: int) -> None:
        self._source = getattr(spark.sparkContext._jvm, PACED_SOURCE)
        self._name = name
        self._pace = BatchPace(settings, partitions)
        self._last_end: float | None = None
        self._closed = False
        self._source.pace(name, self._pace.limit)

    @property
    def limit(self) -> int:
        return self._pace.limit

    def options(self) -> dict[str, str]:
        """The options that make a reader of `PACED_SOURCE` follow this pace."""
        return {PACE_OPTION: self._name}

    def batch_done(self, records: int, started: float) -> None:
        """A batch that began writing at `started` (monotonic) read `records` offsets.

        Its cycle runs from the end of the batch before, so that it includes the
        planning, or from `started` for the first batch or the first after a pause.
        """
        now = time.monotonic()
        seconds = now - (self._last_end if self._last_end is not None else started)
        self._last_end = now
        before = self._pace.limit
        if self._pace.observe(records, seconds) != before and not self._closed:
            self._source.pace(self._name, self._pace.limit)

    def paused(self) -> None:
        """The batches were held: the next cycle starts at its own batch."""
        self._last_end = None

    def close(self) -> None:
        """Forget the pace (a batch abandoned by a stop may still end after this)."""
        self._closed = True
        self._source.forget(self._name)
