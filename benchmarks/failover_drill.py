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

import datetime as dt
import json
import random
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
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
from benchlib.drill_groups import (  # noqa: E402
    TargetGroups,
    compare,
    consume_and_commit,
    produce,
    read_from_synced,
)
from benchlib.drill_options import Options, parse_options  # noqa: E402
from benchlib.environment import environment  # noqa: E402
from benchlib.kafka_data import OffsetWatcher, clusters_running, create_topic  # noqa: E402
from benchlib.replicators import (  # noqa: E402
    TOOL_NAMES,
    start_replicator,
    write_replication_config,
)

OFFSET_LAG_MAX = 100  # both tools' default; the drill does not set it
PROGRESS_EVERY_S = 10.0


# -- the plan ------------------------------------------------------------------------------


def partition_sizes(opts: Options) -> dict[int, int]:
    return {p: len(range(p, opts.records, opts.partitions)) for p in range(opts.partitions)}


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


# -- waiting for the sync ------------------------------------------------------------------


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
            produce(
                source.bootstrap_servers, topics, opts.records, opts.partitions, opts.record_size
            )
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
