#!/usr/bin/env python3
"""Chaos runs and the hour soak: replication between 3-node clusters through failures.

The harness of `tests/integration/test_chaos.py` (`tests/support/chaos_harness.py`)
at full length. Two local clusters of `--brokers` nodes; one Mirrorline driver
copies a stream east->west in exactly-once mode and another west->east in
at-least-once mode, and MirrorMaker 2 (dedicated mode, its defaults:
at-least-once) copies a third stream east->west beside it, under the same
schedule of events (see `--schedule`): rolling restarts, leader and controller
SIGKILLs, an outage of a whole cluster, SIGKILLs of the replicators.

Per event: how long it took and how long each copy then needed to hold every
record its source had acknowledged (time to recover). Per copy: records lost
and duplicated (census by sequence number), the highest record age and its p99
per window, and for Mirrorline's copies the verdict of `mirrorline verify`.

`--soak MINUTES` (`make soak`: 60) is the hour soak: 2,000 records/s of 1 KiB
per flow, one broker restarted every 10 minutes (east and west in turn), the
driver SIGKILLed every 15, the monitoring service beside it; memory of every
process is sampled every 30 s, Mirrorline's (driver, Spark JVM, service) judged
over the last 45 minutes, record-age p99 per 5-minute window. Its topics keep
10 minutes of records (an hour would be about 90 GB on the two clusters), so
`verify` checks the last 5 minutes; the census counts every record. Every
move of partition leadership is recorded; those outside every event are
listed (a window with one is judged all the same).

Results go to `results/chaos-<date>-<time>.json` (`soak-...` for the soak)
unless `--no-save`. Exit code 0 when Mirrorline kept its guarantees (and, for
the soak, its memory and latency goals), 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
# Run the Mirrorline of this checkout, with the test suite's harness.
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from benchlib.common import SOURCE, TARGET, recorded_command, say, stop_on_sigterm  # noqa: E402
from benchlib.environment import environment  # noqa: E402
from benchlib.memory_log import MemoryLog  # noqa: E402

from mirrorline.devcluster import DevClusters  # noqa: E402
from support.chaos_events import Event, parse_schedule  # noqa: E402
from support.chaos_harness import ChaosPlan, ChaosReport, run_chaos  # noqa: E402

DEFAULT_SCHEDULE = (
    f"rolling-restart,leader-kill:{SOURCE},leader-kill:{TARGET},controller-kill:{SOURCE},"
    f"controller-kill:{TARGET},outage:{TARGET}:60,driver-kill,driver-kill"
)
SOAK_WINDOW_S = 300.0
SOAK_RETENTION_MIN = 10.0
SOAK_WARM_UP_S = 300.0
SOAK_JUDGED_S = 45 * 60.0
SOAK_RSS_GROWTH_PERCENT = 5.0
SOAK_AGE_P99_MS = 2_000
# Mirrorline's processes; the brokers' memory is reported, not judged.
JUDGED_ROLES = ("Python driver", "Spark JVM", "service")


def parse_options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Replicate between multi-node dev clusters through restarts, kills and "
        "outages; report records lost and duplicated, record age and time to recover.",
    )
    parser.add_argument(
        "--schedule",
        default=DEFAULT_SCHEDULE,
        help="events, comma-separated: rolling-restart[:ALIAS], broker-restart:ALIAS, "
        "leader-kill:ALIAS, controller-kill:ALIAS, outage:ALIAS:SECONDS, driver-kill "
        "(default: %(default)s)",
    )
    parser.add_argument("--brokers", type=int, default=3, help="nodes per cluster (%(default)s)")
    parser.add_argument("--partitions", type=int, default=4, help="per topic (%(default)s)")
    parser.add_argument("--rate", type=int, help="records/s per flow (2,000; 1,000 for chaos)")
    parser.add_argument("--value-bytes", type=int, help="record size (1,024; 64 for chaos)")
    parser.add_argument(
        "--batch-records",
        type=int,
        help="micro-batch.max.records of Mirrorline's flows (default: batches sized by time)",
    )
    parser.add_argument(
        "--no-mm2", action="store_true", help="without MirrorMaker 2 beside Mirrorline"
    )
    parser.add_argument(
        "--soak",
        type=float,
        metavar="MINUTES",
        help="the soak: a broker restart every 10 min, a driver SIGKILL every 15, the service "
        "beside, memory sampled; replaces --schedule",
    )
    parser.add_argument("--no-save", action="store_true", help="do not write results/*.json")
    parser.add_argument("--work-dir", type=Path, help="clusters and logs (default: a temp dir)")
    parser.add_argument("--keep-work-dir", action="store_true", help="keep clusters and logs")
    args = parser.parse_args(argv)
    soak = args.soak is not None
    args.rate = args.rate or (2_000 if soak else 1_000)
    args.value_bytes = args.value_bytes or (1_024 if soak else 64)
    for name in ("brokers", "partitions", "rate", "value_bytes", "batch_records"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if soak and args.soak < 1:
        parser.error("--soak takes at least 1 minute")
    try:
        args.events = (
            soak_schedule(args.soak) if soak else parse_schedule(args.schedule, (SOURCE, TARGET))
        )
    except ValueError as exc:
        parser.error(str(exc))
    return args


def soak_schedule(minutes: float) -> list[Event]:
    """A broker restart every 10 minutes (the clusters in turn), a driver kill every 15."""
    events = [
        Event("broker-restart", (SOURCE, TARGET)[i % 2], at_s=600.0 * (i + 1))
        for i in range(int(minutes // 10))
        if 600.0 * (i + 1) < minutes * 60
    ]
    events += [
        Event("driver-kill", at_s=900.0 * (i + 1))
        for i in range(int(minutes // 15))
        if 900.0 * (i + 1) < minutes * 60
    ]
    return sorted(events, key=lambda e: e.at_s)


def run(args: argparse.Namespace, memory: MemoryLog | None) -> ChaosReport:
    soak = args.soak is not None
    plan = ChaosPlan(
        args.events,
        partitions=args.partitions,
        rate=args.rate,
        value_bytes=args.value_bytes,
        batch_records=args.batch_records,
        mm2=not args.no_mm2 and not soak,
        window_s=SOAK_WINDOW_S if soak else 60.0,
        duration_s=args.soak * 60 if soak else 0.0,
        service=soak,
        start_timeout_s=600.0,
        # An hour at 2 x 2 MB/s, 3 replicas, source and copy: about 90 GB without it.
        retention_minutes=SOAK_RETENTION_MIN if soak else None,
    )
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="mirrorline-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    say(f"work directory (clusters, logs): {work}")
    clusters = DevClusters(work / "clusters")
    done = False
    try:
        clusters.up([SOURCE, TARGET], brokers=args.brokers, die_with_parent=True, progress=say)
        if memory is not None:
            memory.start()
        report = run_chaos(clusters, work / "run", plan, say)
        done = not report.violations()  # a broken run keeps its logs
    finally:
        if memory is not None:
            memory.stop()
        clusters.down(progress=say)
        if not done or args.keep_work_dir:
            say(f"kept {work} (logs in {work}/run/logs)")
        elif args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return report


def tables(report: ChaosReport) -> str:
    flows = [f.flow for f in report.flows]
    lines = ["| event | at | took | " + " | ".join(f"recovered: {f}" for f in flows) + " |"]
    lines.append("|---" * (3 + len(flows)) + "|")
    for e in report.events:
        cells = [
            "not in time" if (s := e.recovered_s.get(f)) is None else f"{s:.1f} s" for f in flows
        ]
        lines.append(f"| {e.event} | {e.began_s:.0f} s | {e.seconds:.1f} s | {' | '.join(cells)} |")
    lines += [
        "",
        "| copy | records | lost | duplicated | twice in the source | highest age | verify |",
        "|---" * 7 + "|",
    ]
    for f in report.flows:
        verdict = (
            f"{f.verify['checked']:,} checked: "
            + ", ".join(
                f"{f.verify[k]:,} {k}" for k in ("missing", "different", "misplaced", "extra")
            )
            if f.verify
            else "-"
        )
        lines.append(
            f"| {f.flow} | {f.produced:,} | {f.lost:,} | {f.duplicated:,} | "
            f"{f.source_duplicated:,} | {f.max_age_ms / 1000:.1f} s | {verdict} |"
        )
    return "\n".join(lines)


def soak_findings(report: ChaosReport, memory: MemoryLog) -> tuple[dict, list[str]]:
    """Memory growth and record-age p99 per window, and what misses the soak's goals."""
    broken: list[str] = []
    growth = memory.growth(SOAK_JUDGED_S, SOAK_WARM_UP_S)
    for g in growth:
        if g.percent >= SOAK_RSS_GROWTH_PERCENT and g.role in JUDGED_ROLES:
            broken.append(f"{g.role} (pid {g.pid}) grew {g.percent:.1f} % in RSS")
    # Windows with a start, an event or its recovery in them.
    busy = set(range(int(report.caught_up_s // SOAK_WINDOW_S) + 1))
    spans = [
        (e.began_s, e.began_s + e.seconds + max((s or 0.0) for s in e.recovered_s.values()))
        for e in report.events
    ]
    for began, end in spans:
        busy.update(range(int(began // SOAK_WINDOW_S), int(end // SOAK_WINDOW_S) + 1))
    # Reported, not excused: a window with one of these is judged like any other.
    stray_moves = [
        vars(m) | {"window": int(m.at_s // SOAK_WINDOW_S)}
        for m in report.leader_moves
        if not any(began <= m.at_s <= end for began, end in spans)
    ]
    windows = []
    for f in report.flows:
        for window, records, p99 in f.age_p99_ms:
            quiet = window not in busy
            windows.append(
                {
                    "flow": f.flow,
                    "window": window,
                    "records": records,
                    "p99_ms": p99,
                    "event_in_window": not quiet,
                }
            )
            if quiet and p99 > SOAK_AGE_P99_MS:
                broken.append(f"{f.flow}: record-age p99 {p99} ms in window {window}")
    return {
        "memory": [vars(g) for g in growth],
        "age_windows": windows,
        "leader_moves_outside_events": stray_moves,
    }, broken


def save(document: dict, soak: bool) -> Path:
    now = dt.datetime.now()
    path = BENCH_DIR / "results" / f"{'soak' if soak else 'chaos'}-{now:%Y-%m-%d-%H%M}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"date": now.strftime("%Y-%m-%d %H:%M"), **document}, indent=2))
    return path


def main(argv: list[str]) -> int:
    args = parse_options(argv)
    command = recorded_command("chaos.py", argv)

    stop_on_sigterm()
    began = time.monotonic()
    memory = MemoryLog(os.getpid()) if args.soak is not None else None
    try:
        report = run(args, memory)
    except AssertionError as exc:  # the harness could not finish: a replicator died, ...
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print()
    print(tables(report))
    broken = report.violations()
    document = {
        "command": command,
        "settings": {
            k: getattr(args, k)
            for k in ("brokers", "partitions", "rate", "value_bytes", "batch_records", "soak")
        }
        | {"mm2": not args.no_mm2 and args.soak is None},
        **environment(),
        "report": report.to_dict(),
    }
    if memory is not None:
        findings, missed = soak_findings(report, memory)
        document["soak"] = findings | {"missed": missed}
        for g in findings["memory"]:
            print(
                f"{g['role']} (pid {g['pid']}): {g['first_mib']} -> {g['last_mib']} MiB "
                f"({g['percent']:+.1f} %) from {g['from_s']:.0f} s to {g['to_s']:.0f} s"
            )
        strays = findings["leader_moves_outside_events"]
        print(f"leadership moves outside every event: {len(strays)}")
        for m in strays[:20]:
            where = f"{m['cluster']} {m['partition']}"
            print(f"  {m['at_s']:.0f} s {where}: node {m['before']} -> {m['after']}")
        broken += missed
    for violation in broken:
        print(f"BROKEN: {violation}")
    print(f"\n{time.monotonic() - began:,.0f} s in all")
    if not args.no_save:
        print(f"wrote {save(document, args.soak is not None).relative_to(REPO)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
