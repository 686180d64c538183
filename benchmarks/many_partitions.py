"""Many topics and partitions: start time and memory of Mirrorline and MirrorMaker 2.

East holds `--topics` topics of `--partitions` partitions each (200 x 10 by
default), a few records in every partition; each tool replicates a set of its
own (same shape, topics prefixed by the tool) on one MM2-format file, one tool
after the other, on the same two single-node clusters. Per tool:

- time to the first record on the target and to the last (every remote
  partition holding all its records), from the process start;
- peak RSS and PSS of its process tree (driver, Spark JVM and Python workers
  for Mirrorline; the one JVM for MM2), and CPU seconds until the last record.

Both run with `tasks.max` equal to the machine's cores (MM2 runs that many tasks,
Mirrorline at most that many Spark tasks per micro-batch) and the replication
benchmark's data-path block (benchlib.contenders: producer batching, acks,
in-flight requests, fetch sizes, `max.poll.records`), printed at the start.

Run: `.venv/bin/python benchmarks/many_partitions.py [--topics N] [--partitions P]
[--records R] [--no-save]`
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "src"))
sys.path.insert(0, str(BENCH_DIR))

from benchlib.common import SOURCE, TARGET, say  # noqa: E402
from benchlib.contenders import data_path_lines  # noqa: E402
from benchlib.environment import save_result  # noqa: E402
from benchlib.kafka_data import clusters_running  # noqa: E402
from benchlib.replicators import (  # noqa: E402
    MM2_STORAGE_LINES,
    REPLICATION_FACTOR_LINES,
    TOOL_NAMES,
    start_replicator,
)
from confluent_kafka import KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import NewTopic, OffsetSpec  # noqa: E402

from mirrorline.admin_client import AdminClient  # noqa: E402


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--records", type=int, default=5, help="per partition")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--no-save", action="store_true", help="print only")
    opts = parser.parse_args(argv)
    runs = []
    say("both tools' data-path settings:\n    " + "\n    ".join(data_path_lines()[1:]))
    with tempfile.TemporaryDirectory(prefix="many-partitions-") as scratch:
        work = Path(scratch)
        with clusters_running(work / "clusters") as (east, west):
            for tool in ("mirrorline", "mm2"):
                names = [f"{tool}-wide-{i:03d}" for i in range(opts.topics)]
                say(f"{tool}: creating {len(names)} topics x {opts.partitions} partitions")
                _create(east.bootstrap_servers, names, opts.partitions)
                _fill(east.bootstrap_servers, names, opts.partitions, opts.records)
                runs.append(_run(tool, names, east, west, work, opts))
    _report(runs, opts, argv)
    return 0


# Topics per CreateTopics request: a KRaft controller refuses one that would add more
# than 10,000 records to its log at once (a topic and each of its partitions is one).
TOPICS_PER_REQUEST = 100


def _create(bootstrap: str, names: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for start in range(0, len(names), TOPICS_PER_REQUEST):
        chunk = names[start : start + TOPICS_PER_REQUEST]
        for future in admin.create_topics(
            [NewTopic(n, partitions, 1) for n in chunk], request_timeout=120
        ).values():
            future.result(180)


def _fill(bootstrap: str, names: list[str], partitions: int, records: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for name in names:
        for p in range(partitions):
            for i in range(records):
                while True:
                    try:
                        producer.produce(name, b"v" * 100, key=b"%d" % i, partition=p)
                        break
                    except BufferError:  # the local queue is full: let deliveries drain it
                        producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(120) == 0


def _config(tool: str, east, west, work: Path) -> Path:
    lines = [
        f"clusters = {SOURCE}, {TARGET}",
        f"{SOURCE}.bootstrap.servers = {east.bootstrap_servers}",
        f"{TARGET}.bootstrap.servers = {west.bootstrap_servers}",
        f"{SOURCE}->{TARGET}.enabled = true",
        f"{SOURCE}->{TARGET}.topics = {tool}-wide-.*",
        f"tasks.max = {os.cpu_count() or 1}",
        "emit.heartbeats.enabled = false",
        *REPLICATION_FACTOR_LINES,
        *MM2_STORAGE_LINES,
        *data_path_lines(),
    ]
    path = work / f"{tool}.properties"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(tool: str, names: list[str], east, west, work: Path, opts) -> dict:
    config = _config(tool, east, west, work)
    (work / tool).mkdir()
    wanted = opts.partitions * opts.records * len(names)
    remote = [f"{SOURCE}.{n}" for n in names]
    admin = AdminClient({"bootstrap.servers": west.bootstrap_servers})
    process = start_replicator(tool, config, work / tool, work / f"{tool}.log")
    first = last = None
    try:
        deadline = process.started + opts.timeout
        while last is None:
            process.check()
            if time.monotonic() > deadline:
                raise SystemExit(f"{tool}: not every record copied in {opts.timeout:.0f}s")
            copied = _copied(admin, remote)
            now = time.monotonic() - process.started
            if copied and first is None:
                first = now
                say(f"{tool}: first records on the target after {first:.1f}s")
            if copied >= wanted:
                last = now
            time.sleep(1)
        cpu = process.sampler.cpu_seconds_now()
        say(f"{tool}: all {wanted:,} records on the target after {last:.1f}s")
    finally:
        stopped = process.stop()
    return {
        "tool": TOOL_NAMES[tool],
        "topics": len(names),
        "partitions": len(names) * opts.partitions,
        "records": wanted,
        "first_record_s": round(first or 0, 1),
        "all_records_s": round(last, 1),
        "peak_rss_mib": round(process.sampler.peak_rss_kib / 1024),
        "peak_pss_mib": round(process.sampler.peak_pss_kib / 1024),
        "cpu_s": round(cpu, 1),
        "stop_s": stopped.seconds,
    }


def _copied(admin: AdminClient, topics: list[str]) -> int:
    """Records on the target in `topics` (0 for those not created yet)."""
    present = admin.list_topics(timeout=30).topics  # one metadata request, not one per topic
    wanted = {
        TopicPartition(topic, p): OffsetSpec.latest()
        for topic in topics
        if topic in present
        for p in present[topic].partitions
    }
    if not wanted:
        return 0
    total = 0
    for future in admin.list_offsets(wanted, request_timeout=30).values():
        try:
            total += future.result(60).offset
        except KafkaException:  # a partition just created, without a leader yet
            continue
    return total


def _report(runs: list[dict], opts, argv: list[str]) -> None:
    print()
    print(
        "| tool | topics x partitions | first record, s | all records, s | peak RSS, MiB "
        "| peak PSS, MiB | CPU s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in runs:
        print(
            f"| {r['tool']} | {r['topics']} x {opts.partitions} | {r['first_record_s']} "
            f"| {r['all_records_s']} | {r['peak_rss_mib']} | {r['peak_pss_mib']} | {r['cpu_s']} |"
        )
    if opts.no_save:
        return
    out = save_result("many-partitions", "benchmarks/many_partitions.py", argv, runs)
    say(f"saved {out}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
