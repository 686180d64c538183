"""Many consumer groups: how long Mirrorline and MirrorMaker 2 take to checkpoint and
sync every one of them.

East holds one topic of `--partitions` partitions per tool, a few records in each,
and `--groups` consumer groups of that tool with a committed offset on every
partition. Each tool replicates its own topic and groups on an MM2-format file,
one tool after the other, on the same two single-node clusters, both reading the
groups, checkpointing and syncing every `--interval` seconds (`tasks.max` is the
machine's cores). Per tool, from the process start:

- the time until every group has a checkpoint of its offsets on the target
  (`east.checkpoints.internal`, MM2's format, which both write);
- then every group commits new offsets at once (a wave, of records already copied): the
  time from the wave's last commit until every group's checkpoint shows it (about
  one round, or less when a round's reads overlap), and until every group's
  offsets on the target are synced to it;
- CPU seconds of its process tree over the run.

With `--latency-ms`, every client reaches the source through a simulated WAN link
of that round trip (Toxiproxy): each group's offsets cost round trips to read.

Run: `.venv/bin/python benchmarks/many_groups.py [--groups N] [--partitions P]
[--latency-ms MS] [--tools mirrorline,mm2] [--no-save]`
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "src"))
sys.path.insert(0, str(BENCH_DIR))

from benchlib.common import SOURCE, TARGET, BenchmarkError, names_among, say  # noqa: E402
from benchlib.environment import save_result  # noqa: E402
from benchlib.kafka_data import clusters_running, create_topic  # noqa: E402
from benchlib.replicators import (  # noqa: E402
    MM2_STORAGE_LINES,
    REPLICATION_FACTOR_LINES,
    TOOL_NAMES,
    TOOLS,
    start_replicator,
)
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from mirrorline.devlatency import Link  # noqa: E402
from mirrorline.formats import Checkpoint, FormatError  # noqa: E402

# Records per partition, all on east before the tool starts: the groups first commit
# the middle offset, then (the wave) the end, which needs no new record copied.
RECORDS = 40
# Clients that commit the groups' offsets, or read them back on the target, at once.
CLIENTS = 16


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--interval", type=int, default=10, help="seconds between rounds")
    parser.add_argument("--latency-ms", type=int, default=0, help="round trip to the source")
    parser.add_argument(
        "--tools",
        type=lambda text: names_among(text, TOOLS, "tool"),
        default=list(TOOLS),
        help="comma list of mirrorline, mm2",
    )
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--no-save", action="store_true", help="print only")
    opts = parser.parse_args(argv)
    link = Link(opts.latency_ms) if opts.latency_ms else None
    runs = []
    with tempfile.TemporaryDirectory(prefix="many-groups-") as scratch:
        work = Path(scratch)
        with clusters_running(work / "clusters", source_link=link) as (east, west):
            for tool in opts.tools:
                runs.append(_run(tool, east, west, work, opts))
    _report(runs, opts, argv)
    return 0


class _Shape:
    """One tool's topic and groups on east."""

    def __init__(self, tool: str, opts) -> None:
        self.topic = f"{tool}-grouped"
        self.remote = f"{SOURCE}.{self.topic}"
        self.partitions = opts.partitions
        self.groups = [f"{tool}-group-{i:04d}" for i in range(opts.groups)]

    def fill(self, bootstrap: str) -> int:
        """RECORDS records in every partition; the end offset."""
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for p in range(self.partitions):
            for i in range(RECORDS):
                producer.produce(self.topic, b"v" * 100, key=b"%d" % i, partition=p)
        if producer.flush(120):
            raise BenchmarkError(f"records to {self.topic} on east were not delivered")
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "many-groups-ends"})
        try:
            return consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=30)[1]
        finally:
            consumer.close()

    def commit_all(self, bootstrap: str, offset: int) -> None:
        """Every group commits `offset` on every partition (as no member: the groups are
        empty), CLIENTS at a time."""

        def commit(group: str) -> None:
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
            try:
                consumer.commit(
                    offsets=[TopicPartition(self.topic, p, offset) for p in range(self.partitions)],
                    asynchronous=False,
                )
            finally:
                consumer.close()

        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(commit, self.groups))


class _Checkpoints:
    """The newest upstream offset checkpointed per (group, partition) of one shape."""

    def __init__(self, bootstrap: str, shape: _Shape) -> None:
        self._shape = shape
        self._wanted = set(shape.groups)
        self._seen: dict[tuple[str, int], int] = {}
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"many-groups-reader-{shape.topic}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self._consumer.subscribe([f"{SOURCE}.checkpoints.internal"])

    def read(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            msg = self._consumer.poll(0.1)
            if msg is None or msg.error() or msg.value() is None:
                continue
            try:
                checkpoint = Checkpoint.decode(msg.key(), msg.value())
            except FormatError:
                continue
            if checkpoint.group in self._wanted and checkpoint.topic == self._shape.remote:
                key = (checkpoint.group, checkpoint.partition)
                self._seen[key] = max(self._seen.get(key, -1), checkpoint.upstream_offset)

    def at(self, offset: int) -> int:
        """Groups whose every partition is checkpointed at `offset` or later."""
        return sum(
            all(self._seen.get((g, p), -1) >= offset for p in range(self._shape.partitions))
            for g in self._shape.groups
        )

    def close(self) -> None:
        self._consumer.close()


def _synced(bootstrap: str, shape: _Shape, offset: int) -> int:
    """Groups whose offsets on the target are at `offset`'s translation or later (the
    target's copy of the topic holds the same records, from 0: the same offset)."""

    def synced(group: str) -> bool:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            found = consumer.committed(
                [TopicPartition(shape.remote, p) for p in range(shape.partitions)], timeout=30
            )
        finally:
            consumer.close()
        return all(tp.offset >= offset for tp in found)

    with ThreadPoolExecutor(CLIENTS) as pool:
        return sum(pool.map(synced, shape.groups))


def _config(tool: str, shape: _Shape, east, west, work: Path, opts) -> Path:
    lines = [
        f"clusters = {SOURCE}, {TARGET}",
        f"{SOURCE}.bootstrap.servers = {east.bootstrap_servers}",
        f"{TARGET}.bootstrap.servers = {west.bootstrap_servers}",
        f"{SOURCE}->{TARGET}.enabled = true",
        f"{SOURCE}->{TARGET}.topics = {shape.topic}",
        f"{SOURCE}->{TARGET}.groups = {tool}-group-.*",
        f"tasks.max = {os.cpu_count() or 1}",
        f"emit.checkpoints.interval.seconds = {opts.interval}",
        f"refresh.groups.interval.seconds = {opts.interval}",
        "sync.group.offsets.enabled = true",
        f"sync.group.offsets.interval.seconds = {opts.interval}",
        "emit.heartbeats.enabled = false",
        # MM2 sends the offset sync of a partition's last records when its task commits,
        # every offset.flush.interval.ms (60 s by default): until then it cannot translate
        # the wave's offsets exactly. Each round, as the other intervals.
        f"offset.flush.interval.ms = {opts.interval * 1000}",
        *REPLICATION_FACTOR_LINES,
        *MM2_STORAGE_LINES,
    ]
    path = work / f"{tool}.properties"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(tool: str, east, west, work: Path, opts) -> dict:
    shape = _Shape(tool, opts)
    say(f"{tool}: {len(shape.groups)} groups on {shape.topic} ({shape.partitions} partitions)")
    create_topic(east.bootstrap_servers, shape.topic, shape.partitions)
    second = shape.fill(east.bootstrap_servers)
    first = second // 2
    shape.commit_all(east.bootstrap_servers, first)
    config = _config(tool, shape, east, west, work, opts)
    (work / tool).mkdir()
    checkpoints = _Checkpoints(west.bootstrap_servers, shape)
    process = start_replicator(tool, config, work / tool, work / f"{tool}.log")
    deadline = process.started + opts.timeout

    def until(what: str, done) -> float:
        while not done():
            process.check()
            if time.monotonic() > deadline:
                raise BenchmarkError(f"{tool}: not {what} in {opts.timeout:.0f}s")
            checkpoints.read(1.0)
        return time.monotonic()

    try:
        everyone = len(shape.groups)
        at = until("every group checkpointed", lambda: checkpoints.at(first) == everyone)
        all_checkpointed = at - process.started
        say(f"{tool}: every group checkpointed {all_checkpointed:.1f}s after start")
        shape.commit_all(east.bootstrap_servers, second)
        wave = time.monotonic()
        at = until("the wave checkpointed", lambda: checkpoints.at(second) == everyone)
        wave_checkpointed = at - wave
        say(f"{tool}: the wave checkpointed {wave_checkpointed:.1f}s after its last commit")
        at = until(
            "the wave synced",
            lambda: _synced(west.bootstrap_servers, shape, second) == everyone,
        )
        wave_synced = at - wave
        say(f"{tool}: the wave synced {wave_synced:.1f}s after its last commit")
        cpu = process.sampler.cpu_seconds_now()
    finally:
        checkpoints.close()
        stopped = process.stop()
    return {
        "tool": TOOL_NAMES[tool],
        "groups": len(shape.groups),
        "partitions": shape.partitions,
        "latency_ms": opts.latency_ms,
        "interval_s": opts.interval,
        "all_checkpointed_s": round(all_checkpointed, 1),
        "wave_checkpointed_s": round(wave_checkpointed, 1),
        "wave_synced_s": round(wave_synced, 1),
        "cpu_s": round(cpu, 1),
        "peak_rss_mib": round(process.sampler.peak_rss_kib / 1024),
        "stop_s": stopped.seconds,
    }


def _report(runs: list[dict], opts, argv: list[str]) -> None:
    print()
    print(
        f"{opts.groups} groups x {opts.partitions} partitions, rounds every {opts.interval} s, "
        f"source round trip {opts.latency_ms} ms"
    )
    print(
        "| tool | every group checkpointed, s from start | wave checkpointed, s "
        "| wave synced, s | CPU s | peak RSS, MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for r in runs:
        print(
            f"| {r['tool']} | {r['all_checkpointed_s']} | {r['wave_checkpointed_s']} "
            f"| {r['wave_synced_s']} | {r['cpu_s']} | {r['peak_rss_mib']} |"
        )
    if opts.no_save:
        return
    out = save_result("many-groups", "benchmarks/many_groups.py", argv, runs)
    say(f"saved {out}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
