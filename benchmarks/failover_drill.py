#!/usr/bin/env python3
"""Failover drill: how exactly do Mirrorline and MirrorMaker 2 move consumer groups?

Both replicators run on the same two local Apache Kafka clusters (`east` -> `west`),
on identical data, one after the other. Per tool:

1. A source topic on `east` (`drill-ml` for Mirrorline, `drill-mm2` for MM2)
   holds the same numbered records; every value carries its partition and its
   position in that partition.
2. A few consumer groups read a different, uneven number of records of each
   partition on `east` and commit.
3. The tool replicates the topic with checkpoints and automatic group offset sync
   every few seconds, until every group's committed offsets on `west` exist for
   every partition and stop changing; then the tool is stopped.
4. Each group, on `west`, reads its topic from the synced offsets to the end.
   Compared record by record with what it read on `east`: records read again
   (already read on `east`), records skipped (unread on `east`, not read on
   `west`), and partitions the tool gave no offset for.

Run `python benchmarks/failover_drill.py --help`; see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
# Drill the Mirrorline of this checkout, whatever else the environment has installed.
sys.path.insert(0, str(REPO / "src"))

from benchlib.common import (  # noqa: E402
    SOURCE,
    TARGET,
    BenchmarkError,
    recorded_command,
    say,
    stop_on_sigterm,
    wait_for,
)
from benchlib.environment import environment  # noqa: E402
from benchlib.kafka_data import OffsetWatcher, clusters_running, create_topic  # noqa: E402
from benchlib.replicators import (  # noqa: E402
    TOOL_NAMES,
    TOOLS,
    start_replicator,
    write_replication_config,
)
from confluent_kafka import (  # noqa: E402
    OFFSET_STORED,
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
)

OFFSET_LAG_MAX = 100  # both tools' default; the drill does not set it
PROGRESS_EVERY_S = 10.0


@dataclass(frozen=True)
class Options:
    records: int
    record_size: int
    partitions: int
    groups: int
    interval: float
    settle: float
    give_up: float
    timeout: float
    seed: int
    tools: tuple[str, ...]
    save: bool
    work_dir: Path | None
    keep_work_dir: bool


def parse_options(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(
        description="Fail consumer groups over from east to west with Mirrorline and with "
        "MirrorMaker 2, and count the records each group reads again or skips on west.",
    )
    parser.add_argument(
        "--records", type=int, default=50_000, help="records per source topic (%(default)s)"
    )
    parser.add_argument(
        "--record-size", type=int, default=100, help="value size in bytes (%(default)s)"
    )
    parser.add_argument(
        "--partitions", type=int, default=3, help="partitions per topic (%(default)s)"
    )
    parser.add_argument(
        "--groups", type=int, default=3, help="consumer groups per tool (%(default)s)"
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=5,
        help="emit.checkpoints, sync.group.offsets and refresh.groups interval, seconds "
        "(%(default)s)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=30,
        help="the groups' offsets on west count as synced once unchanged this long, seconds "
        "(%(default)s)",
    )
    parser.add_argument(
        "--give-up",
        type=float,
        default=180,
        help="once everything is replicated and offsets are unchanged this long, go on even "
        "if some partitions have no offset (counted), seconds (%(default)s)",
    )
    parser.add_argument(
        "--timeout", type=float, default=900, help="longest run of one tool, seconds (%(default)s)"
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="chooses how much each group reads (%(default)s)"
    )
    parser.add_argument("--only", choices=TOOLS, help="run one tool only")
    parser.add_argument("--no-save", action="store_true", help="print only; do not write results/")
    parser.add_argument(
        "--work-dir", type=Path, help="clusters and logs (default: a new temporary directory)"
    )
    parser.add_argument(
        "--keep-work-dir", action="store_true", help="keep clusters' data and logs afterwards"
    )
    args = parser.parse_args(argv)
    if args.partitions < 1 or args.groups < 1 or args.record_size < 16:
        parser.error("--partitions and --groups must be at least 1, --record-size at least 16")
    if args.records < 3 * args.partitions:
        parser.error("--records must be at least 3 per partition")
    if args.interval <= 0 or args.settle <= 0 or args.give_up < args.settle:
        parser.error("--interval and --settle must be > 0 and --give-up >= --settle")
    return Options(
        records=args.records,
        record_size=args.record_size,
        partitions=args.partitions,
        groups=args.groups,
        interval=args.interval,
        settle=args.settle,
        give_up=args.give_up,
        timeout=args.timeout,
        seed=args.seed,
        tools=(args.only,) if args.only else TOOLS,
        save=not args.no_save,
        work_dir=args.work_dir,
        keep_work_dir=args.keep_work_dir,
    )


# -- data ------------------------------------------------------------------------------

Record = tuple[int, int]  # (partition, position in the partition), as a value carries it


def _value(partition: int, position: int, size: int) -> bytes:
    head = b"%d:%d:" % (partition, position)
    return head + b"x" * max(0, size - len(head))


def _record(value: bytes) -> Record:
    partition, position, _ = value.split(b":", 2)
    return int(partition), int(position)


def partition_sizes(opts: Options) -> dict[int, int]:
    return {p: len(range(p, opts.records, opts.partitions)) for p in range(opts.partitions)}


def produce(bootstrap: str, topics: list[str], opts: Options) -> None:
    """The same records, in the same partitions and order, into every topic."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "acks": "all",
            "batch.size": 1_000_000,
            # Retries (a topic created moments ago) must not reorder: the groups check
            # each partition's records in order.
            "enable.idempotence": True,
        }
    )
    failures: list[str] = []

    def delivered(error, _msg) -> None:
        if error is not None:
            failures.append(error.str())

    for i in range(opts.records):
        partition = i % opts.partitions
        value = _value(partition, i // opts.partitions, opts.record_size)
        for topic in topics:
            while True:
                try:
                    producer.produce(
                        topic, value, b"k%d" % i, partition=partition, on_delivery=delivered
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
    remaining = producer.flush(120)
    if remaining or failures:
        raise BenchmarkError(
            f"producing to {', '.join(topics)} failed: {remaining} unacknowledged, "
            f"errors: {failures[:3]}"
        )


def read_plan(opts: Options) -> list[dict[int, int]]:
    """How many records each group reads of each partition: uneven, never 0, never all.

    The same for both tools (one seed), so they are drilled on the same positions.
    """
    rng = random.Random(opts.seed)
    sizes = partition_sizes(opts)
    return [{p: rng.randint(1, n - 1) for p, n in sizes.items()} for _ in range(opts.groups)]


def group_names(tool: str, opts: Options) -> list[str]:
    short = "ml" if tool == "mirrorline" else "mm2"
    return [f"drill-{short}-g{i + 1}" for i in range(opts.groups)]


def consume_and_commit(bootstrap: str, group: str, topic: str, counts: dict[int, int]) -> None:
    """Read the first `counts[p]` records of each partition as `group`, then commit.

    The values are checked on the way: the group must have read exactly the
    records the plan says, so that the comparison on west starts from a known point.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in counts])
        read = {p: 0 for p in counts}
        last_offset: dict[int, int] = {}

        def done() -> bool:
            for msg in consumer.consume(1000, timeout=0.5):
                if msg.error():
                    raise BenchmarkError(f"group {group} reading {topic}: {msg.error().str()}")
                p = msg.partition()
                if read[p] >= counts[p]:
                    continue
                if _record(msg.value()) != (p, read[p]):
                    raise BenchmarkError(
                        f"{topic}[{p}] offset {msg.offset()}: expected record {read[p]}, "
                        f"found {msg.value()[:30]!r}"
                    )
                read[p] += 1
                last_offset[p] = msg.offset()
                if read[p] == counts[p]:
                    consumer.pause([TopicPartition(topic, p)])
            return read == counts

        wait_for(done, timeout=120, what=f"group {group} reading {counts} of {topic}", interval=0)
        consumer.commit(
            offsets=[TopicPartition(topic, p, o + 1) for p, o in last_offset.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


# -- the target side ---------------------------------------------------------------------


class TargetGroups:
    """The drill's groups' committed offsets of one topic on the target.

    Read through a consumer of each group that never joins it (no subscription),
    so the group stays without members for the tool's offset sync. A consumer,
    not the admin client: librdkafka 2.16's admin ListConsumerGroupOffsets
    crashes the process when a fresh cluster's group coordinator is still loading.
    """

    def __init__(self, bootstrap: str, groups: list[str], topic: str, partitions: int) -> None:
        self.topic = topic
        self.partitions = partitions
        self.groups = groups
        self._consumers = {
            group: Consumer(
                {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
            )
            for group in groups
        }

    def committed(self) -> dict[str, dict[int, int]] | None:
        """group -> {partition: offset}; None if the cluster did not answer in time."""
        found = {}
        for group, consumer in self._consumers.items():
            try:
                answer = consumer.committed(
                    [TopicPartition(self.topic, p) for p in range(self.partitions)], timeout=30
                )
            except KafkaException:
                return None
            found[group] = {tp.partition: tp.offset for tp in answer if tp.offset >= 0}
        return found

    def close(self) -> None:
        for consumer in self._consumers.values():
            consumer.close()


def wait_until_synced(tool, proc, clusters, topic, on_target: TargetGroups, opts) -> dict:
    """Poll until everything is replicated and every group's offsets on west settled.

    Settled: every partition of every group has an offset and none changed for
    `opts.settle` seconds; or, after `opts.give_up` seconds without a change,
    whatever the tool synced (partitions without an offset are counted then).
    """
    source, target = clusters
    source_watch, target_watch = (
        OffsetWatcher(source.bootstrap_servers),
        OffsetWatcher(target.bootstrap_servers),
    )
    remote = on_target.topic
    expected = source_watch.end_offsets(topic)
    wanted = len(on_target.groups) * opts.partitions
    last: dict = {}
    changed_at = time.monotonic()
    replicated_at: float | None = None
    told = proc.started
    try:
        while True:
            now = time.monotonic()
            arrived = target_watch.end_offsets(remote)
            if (
                replicated_at is None
                and arrived
                and all(arrived.get(p, 0) >= n for p, n in expected.items())
            ):
                replicated_at = now
                say(
                    f"  all {sum(expected.values()):,} records on {TARGET} after "
                    f"{now - proc.started:.1f}s"
                )
            offsets = on_target.committed()
            if offsets is None:
                offsets = last
            elif offsets != last:
                last, changed_at = offsets, now
            synced = sum(len(o) for o in offsets.values())
            # Offsets count as settled only from the moment everything is replicated.
            quiet = now - max(changed_at, replicated_at or now)
            if replicated_at is not None and (
                (synced == wanted and quiet >= opts.settle) or quiet >= opts.give_up
            ):
                return {
                    "offsets": offsets,
                    "replicated_after_s": round(replicated_at - proc.started, 1),
                    "last_offset_change_after_s": round(changed_at - proc.started, 1),
                    "gave_up_waiting": synced < wanted,
                }
            proc.check()
            if now - proc.started > opts.timeout:
                raise BenchmarkError(
                    f"{TOOL_NAMES[tool]}: after {opts.timeout:.0f}s, "
                    f"{sum(arrived.values()):,} of {sum(expected.values()):,} records "
                    f"replicated and {synced} of {wanted} group partitions synced; "
                    f"see {proc.log_path}"
                )
            if now - told >= PROGRESS_EVERY_S:
                told = now
                say(
                    f"  {now - proc.started:.0f}s: {sum(arrived.values()):,} / "
                    f"{sum(expected.values()):,} records on {TARGET}; {synced} / {wanted} "
                    f"group partitions synced, unchanged for {quiet:.0f}s"
                )
            time.sleep(1.0)
    finally:
        source_watch.close()
        target_watch.close()


def read_from_synced(bootstrap: str, group: str, topic: str, partitions: list[int]) -> list:
    """What `group` gets on `topic`, starting where its committed offsets say, to the end.

    The consumer asks the broker for the group's committed offset of each of
    `partitions` itself (`OFFSET_STORED`), as an application that fails over does;
    it commits nothing.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
        }
    )
    got: list[Record] = []
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_STORED) for p in partitions])
        pending = {p for p in partitions if ends[p] > 0}
        for p in list(pending):  # a group already at the end has nothing to read
            committed = consumer.committed([TopicPartition(topic, p)], timeout=10)[0].offset
            if committed >= ends[p]:
                pending.discard(p)

        def at_end() -> bool:
            for msg in consumer.consume(1000, timeout=0.5):
                if msg.error():
                    raise BenchmarkError(f"group {group} reading {topic}: {msg.error().str()}")
                got.append(_record(msg.value()))
                if msg.offset() >= ends[msg.partition()] - 1:
                    pending.discard(msg.partition())
            return not pending

        wait_for(at_end, timeout=120, what=f"group {group} reading {topic} to its end", interval=0)
    finally:
        consumer.close()
    return got


def compare(plan: dict[int, int], sizes: dict[int, int], synced: dict[int, int], got) -> dict:
    """Re-read, skipped and duplicated records of one group, per partition and in total."""
    per_partition = {}
    for p, n in sizes.items():
        read_on_east = plan[p]
        if p not in synced:
            per_partition[p] = {
                "read_on_east": read_on_east,
                "synced_offset": None,
                "re_read": 0,
                "skipped": 0,
                "duplicates": 0,
                # What a consumer's auto.offset.reset would then cost.
                "re_read_if_earliest": read_on_east,
                "skipped_if_latest": n - read_on_east,
            }
            continue
        seen = [pos for q, pos in got if q == p]
        distinct = set(seen)
        per_partition[p] = {
            "read_on_east": read_on_east,
            "synced_offset": synced[p],
            "read_on_west": len(seen),
            "re_read": sum(1 for pos in distinct if pos < read_on_east),
            "skipped": sum(1 for pos in range(read_on_east, n) if pos not in distinct),
            "duplicates": len(seen) - len(distinct),
        }
    present = [v for v in per_partition.values() if v["synced_offset"] is not None]
    return {
        "read_on_west": sum(v["read_on_west"] for v in present),
        "re_read": sum(v["re_read"] for v in present),
        "skipped": sum(v["skipped"] for v in present),
        "duplicates": sum(v["duplicates"] for v in present),
        "partitions_without_offset": len(per_partition) - len(present),
        "partitions": per_partition,
    }


# -- one tool ------------------------------------------------------------------------------


def drill_config(path: Path, clusters, topic: str, groups_pattern: str, opts: Options) -> Path:
    """The shared replication file (clusters, flow, topic, tasks.max, replication
    factors), plus checkpoints and group offset sync every `opts.interval` seconds."""
    write_replication_config(path, clusters, topic, opts.partitions)
    seconds = f"{opts.interval:g}"
    extra = [
        f"{SOURCE}->{TARGET}.groups = {groups_pattern}",
        f"emit.checkpoints.interval.seconds = {seconds}",
        f"refresh.groups.interval.seconds = {seconds}",
        "sync.group.offsets.enabled = true",
        f"sync.group.offsets.interval.seconds = {seconds}",
        f"# offset.lag.max is left at its default ({OFFSET_LAG_MAX}) for both tools.",
    ]
    with path.open("a") as out:
        out.write("\n".join(extra) + "\n")
    return path


def drill_tool(tool: str, clusters, work: Path, opts: Options, plans) -> dict:
    source, target = clusters
    topic = source_topic(tool)
    remote = f"{SOURCE}.{topic}"
    groups = group_names(tool, opts)
    sizes = partition_sizes(opts)
    for group, plan in zip(groups, plans, strict=True):
        consume_and_commit(source.bootstrap_servers, group, topic, plan)
    say(f"{TOOL_NAMES[tool]}: {', '.join(groups)} committed on {SOURCE}; replicating {topic}")
    pattern = f"drill-{'ml' if tool == 'mirrorline' else 'mm2'}-.*"
    config = drill_config(work / f"{tool}-drill.properties", clusters, topic, pattern, opts)
    on_target = TargetGroups(target.bootstrap_servers, groups, remote, opts.partitions)
    try:
        before = wait_for(
            on_target.committed, timeout=120, what=f"the group coordinator of {TARGET}"
        )
        if any(before.values()):
            raise BenchmarkError(f"groups on {TARGET} have offsets before the drill: {before}")
        proc = start_replicator(tool, config, work, work / "logs" / f"{tool}-drill.log")
        try:
            synced = wait_until_synced(tool, proc, clusters, topic, on_target, opts)
        finally:
            stopped = proc.stop()
    finally:
        on_target.close()
    say(
        f"  offsets settled {synced['last_offset_change_after_s']}s after the start; "
        f"{TOOL_NAMES[tool]} stopped ({'gracefully' if stopped.graceful else 'killed'})"
    )
    results = {}
    for group, plan in zip(groups, plans, strict=True):
        start = synced["offsets"].get(group, {})
        got = read_from_synced(target.bootstrap_servers, group, remote, sorted(start))
        results[group] = compare(plan, sizes, start, got)
    return {
        "topic": topic,
        "groups": results,
        "replicated_after_s": synced["replicated_after_s"],
        "last_offset_change_after_s": synced["last_offset_change_after_s"],
        "gave_up_waiting": synced["gave_up_waiting"],
        "stop": asdict(stopped),
    }


def source_topic(tool: str) -> str:
    return "drill-ml" if tool == "mirrorline" else "drill-mm2"


# -- report ----------------------------------------------------------------------------------


def settings_text(opts: Options) -> str:
    return (
        f"{opts.records:,} records of {opts.record_size} B over {opts.partitions} partitions "
        f"per tool; {opts.groups} consumer groups per tool, each reading a different uneven "
        f"number of records of every partition on `{SOURCE}` (seed {opts.seed}); "
        f"`emit.checkpoints.interval.seconds`, `refresh.groups.interval.seconds` and "
        f"`sync.group.offsets.interval.seconds` = {opts.interval:g} with "
        f"`sync.group.offsets.enabled = true`; `offset.lag.max` left at its default "
        f"({OFFSET_LAG_MAX}) for both tools; offsets on `{TARGET}` count as synced once "
        f"unchanged for {opts.settle:g} s; single-node KRaft clusters on loopback; "
        f"tools run one after the other."
    )


def markdown_table(results: dict, plans) -> str:
    lines = [
        "| tool | group | records read on east | re-read on west | skipped on west "
        "| partitions without offset |",
        "|---|---|---|---|---|---|",
    ]
    for tool, result in results.items():
        totals = {"read": 0, "re_read": 0, "skipped": 0, "missing": 0}
        for (group, numbers), plan in zip(result["groups"].items(), plans, strict=True):
            read = sum(plan.values())
            per_partition = " + ".join(f"{plan[p]:,}" for p in sorted(plan))
            lines.append(
                f"| {TOOL_NAMES[tool]} | {group} | {read:,} ({per_partition}) "
                f"| {numbers['re_read']:,} | {numbers['skipped']:,} "
                f"| {numbers['partitions_without_offset']} |"
            )
            totals["read"] += read
            totals["re_read"] += numbers["re_read"]
            totals["skipped"] += numbers["skipped"]
            totals["missing"] += numbers["partitions_without_offset"]
        lines.append(
            f"| **{TOOL_NAMES[tool]}** | **all** | {totals['read']:,} | "
            f"**{totals['re_read']:,}** | **{totals['skipped']:,}** | **{totals['missing']}** |"
        )
    copies = ", ".join(
        f"{TOOL_NAMES[tool]} {sum(g['duplicates'] for g in result['groups'].values()):,}"
        for tool, result in results.items()
    )
    lines += ["", f"Records a group read twice on {TARGET} (copies on the target): {copies}."]
    return "\n".join(lines)


def run(opts: Options, command: str) -> dict:
    work = opts.work_dir or Path(tempfile.mkdtemp(prefix="mirrorline-drill-"))
    (work / "logs").mkdir(parents=True, exist_ok=True)
    say(f"work directory (clusters, logs): {work}")
    plans = read_plan(opts)
    results: dict = {}
    failed = True
    try:
        with clusters_running(work / "clusters") as clusters:
            source = clusters[0]
            topics = [source_topic(t) for t in opts.tools]
            for topic in topics:
                create_topic(source.bootstrap_servers, topic, opts.partitions)
            say(f"producing {opts.records:,} records into {', '.join(topics)} on {SOURCE}")
            produce(source.bootstrap_servers, topics, opts)
            for tool in opts.tools:
                results[tool] = drill_tool(tool, clusters, work, opts, plans)
        failed = False
    finally:
        if failed or opts.keep_work_dir:
            say(f"kept {work} (logs in {work / 'logs'})")
        elif opts.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    now = dt.datetime.now()
    return {
        "date": now.strftime("%Y-%m-%d %H:%M"),
        "file": f"failover-drill-{now:%Y-%m-%d}.json",
        "command": command,
        "settings": {
            **{
                k: v
                for k, v in asdict(opts).items()
                if k not in ("save", "work_dir", "keep_work_dir")
            },
            "offset.lag.max": OFFSET_LAG_MAX,
        },
        "settings_text": settings_text(opts),
        "read_on_east": [dict(plan) for plan in plans],
        **environment(),
        "results": results,
    }


def main(argv: list[str]) -> int:
    opts = parse_options(argv)
    command = recorded_command("failover_drill.py", argv)

    stop_on_sigterm()
    try:
        report = run(opts, command)
    except BenchmarkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print()
    print(settings_text(opts))
    print()
    print(markdown_table(report["results"], read_plan(opts)))
    if opts.save:
        results_dir = BENCH_DIR / "results"
        results_dir.mkdir(exist_ok=True)
        (results_dir / report["file"]).write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote benchmarks/results/{report['file']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
