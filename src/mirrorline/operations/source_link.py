"""How far a flow's source cluster is, and what the flow's settings let through at that distance.

`config check` measures the round trip to each flow's source (`measure`: the
fastest of a few DescribeCluster requests on a warm connection, so neither the
TCP, TLS and SASL handshakes of the first request nor a busy moment of the
broker or of this host count) and turns it into
numbers and advice (`advise`), because a far source changes what limits a
replicator:

- **Reads per round trip.** The writer keeps one Java consumer per source
  partition, and a Java consumer has one fetch in flight per connection: a
  partition reads at most `max.partition.fetch.bytes` (and never more than
  `fetch.max.bytes`) per round trip.
- **The TCP window.** A positive `receive.buffer.bytes` fixes the socket's
  receive buffer and turns Linux's autotuning off: a connection then carries at
  most that many bytes per round trip. Mirrorline's default, -1, leaves the
  window to the operating system.
- **Record age in micro-batches.** A micro-batch is planned from latest offsets
  kept current in the background, and its tasks start every partition's fetch
  at once and wait for them: about 1.3 round trips of record age at p50 on top
  of about 250 ms of batch cost (measured at 25, 50, 100 and 200 ms: 276, 395,
  364 and 507 ms). The real-time mode reads continuously, as MirrorMaker 2's
  tasks do, and its record age stays near one round trip.

Below `FAR_MS` none of this matters and `advise` says nothing but the number.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

from mirrorline.config.flow_settings import FlowSettings
from mirrorline.config.model import FlowConfig
from mirrorline.kafka import ClusterClients

#: A source at least this many ms away gets the far-source numbers and advice.
FAR_MS = 10.0
#: Round trips timed after the first (which opens the connection).
SAMPLES = 5
#: A per-partition read ceiling below this (MB/s) gets a recommended fetch size.
PARTITION_GOAL_MB_S = 100.0
# Micro-batch record age at p50: a fixed part and round trips per batch (see the module).
MICRO_BATCH_BASE_MS = 250.0
MICRO_BATCH_ROUND_TRIPS = 1.3
# The Java consumer's defaults, for settings a flow's file leaves out.
JAVA_DEFAULTS = {
    "max.partition.fetch.bytes": 1_048_576,
    "fetch.max.bytes": 52_428_800,
    "receive.buffer.bytes": 65_536,
}
MIB = 1_048_576


@dataclass(frozen=True)
class SourceLink:
    """A flow's measured round trip to its source, or why it is unknown, and the advice."""

    source: str
    round_trip_ms: float | None = None
    note: str | None = None  # why round_trip_ms is None
    facts: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        if self.round_trip_ms is None:
            return f"round trip unknown: {self.note}"
        distance = "far" if self.round_trip_ms >= FAR_MS else "near"
        return (
            f"{self.round_trip_ms:.1f} ms round trip to {self.source} ({distance}; "
            f"fastest of {SAMPLES})"
        )

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def measure(clients: ClusterClients, timeout: float) -> float:
    """The shortest round trip to `clients`' cluster in ms; raises what the client raises."""
    admin = clients.admin
    admin.describe_cluster(request_timeout=timeout).result(timeout)  # opens the connection
    times = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        admin.describe_cluster(request_timeout=timeout).result(timeout)
        times.append((time.perf_counter() - start) * 1000.0)
    return min(times)


def advise(flow: FlowConfig, round_trip_ms: float) -> SourceLink:
    """The numbers and advice for `flow` at `round_trip_ms` from its source (see the module)."""
    if round_trip_ms < FAR_MS:
        return SourceLink(flow.source, round_trip_ms)
    seconds = round_trip_ms / 1000.0
    consumer = flow.java_client_settings("source", "consumer")
    per_partition = min(
        _bytes(consumer, "max.partition.fetch.bytes"), _bytes(consumer, "fetch.max.bytes")
    )
    ceiling = per_partition / seconds / 1e6
    facts = [
        f"each source partition reads at most {_size(per_partition)} per round trip: "
        f"{ceiling:,.0f} MB/s per partition (max.partition.fetch.bytes, fetch.max.bytes)"
    ]
    advice = []
    if ceiling < PARTITION_GOAL_MB_S:
        wanted = math.ceil(PARTITION_GOAL_MB_S * 1e6 * seconds / MIB) * MIB
        advice.append(
            f"{flow.source}.consumer.max.partition.fetch.bytes = {wanted} (and fetch.max.bytes "
            f"at least as much) lets a partition read {PARTITION_GOAL_MB_S:.0f} MB/s "
            "at this distance"
        )
    buffer = _bytes(consumer, "receive.buffer.bytes")
    if buffer > 0:
        facts.append(
            f"receive.buffer.bytes = {buffer} fixes the TCP window: at most "
            f"{buffer / seconds / 1e6:,.1f} MB/s per connection"
        )
        advice.append(
            f"{flow.source}.consumer.receive.buffer.bytes = -1 lets the operating system size "
            "the window to the link"
        )
    settings = FlowSettings.of(flow)
    if settings.real_time_batch_ms is None:
        age = MICRO_BATCH_BASE_MS + MICRO_BATCH_ROUND_TRIPS * round_trip_ms
        facts.append(f"micro-batches: record age about {age:,.0f} ms at p50 at this distance")
        if settings.exactly_once:
            advice.append(
                "exactly-once runs in micro-batches; a longer micro-batch.duration.ms makes fewer"
            )
        else:
            advice.append(
                f"data.path.mode = real-time keeps record age near one round trip "
                f"(about {round_trip_ms:,.0f} ms more than on a near source)"
            )
    return SourceLink(flow.source, round_trip_ms, facts=tuple(facts), advice=tuple(advice))


def _bytes(settings: Mapping[str, str], name: str) -> int:
    value = settings.get(name)
    return JAVA_DEFAULTS[name] if value is None else int(value)


def _size(count: int) -> str:
    return f"{count / MIB:g} MiB" if count % MIB == 0 else f"{count:,} bytes"
