#!/usr/bin/env python3
"""Mirrorline next to MirrorMaker 2 when the source cluster is far away: throughput of a
1 KiB backlog and record age of a steady stream, at several WAN round trips.

For each round trip (`--latencies`, 25, 50, 100 and 200 ms by default) two single-node
dev clusters start: the source `east` behind a simulated WAN link of that round
trip (`mirrorline dev up --latency-ms`, Toxiproxy on loopback; every client of
east crosses it) and the target `west` without one. The replicators run "near
the target", as MM2 and Mirrorline both recommend, so their reads cross the WAN
and their writes do not. The records are pre-loaded and the steady load produced
through the link too, like producers next to a remote source would not be: that
costs set-up time, never the measured window.

Contenders, one after the other on the same clusters, each on its own copy of the
same records, with the same data-path client settings (benchlib.contenders'
DATA_PATH block, printed and checked in each contender's effective configuration):
Mirrorline at-least-once (`mirrorline driver`, micro-batches), Mirrorline in
real-time mode, MirrorMaker 2 tuned (dedicated mode), and the replication
benchmark's copy loop (one consumer, one producer, nothing else: what this machine
moves across the link at most). Workloads: `backlog_1k` and `steady_5k` of the
replication benchmark.

Results: benchmarks/results/wan-<date>-<time>.json (settings, configurations,
environment, numbers); the tables are printed. See benchmarks/RESULTS.md, "WAN".
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import benchlib  # noqa: F401  (puts this checkout's src/ first on the path)
from benchlib import client_check, report
from benchlib.backlog import measure_backlog
from benchlib.common import (
    BENCH_DIR,
    SOURCE,
    TARGET,
    BenchmarkError,
    names_among,
    recorded_command,
    say,
    stop_on_sigterm,
)
from benchlib.contenders import (
    BASELINE,
    CONTENDERS,
    DATA_PATH_CONSUMER,
    DATA_PATH_PRODUCER,
    config_text,
)
from benchlib.environment import environment, environment_text
from benchlib.kafka_data import clusters_running, warm_up
from benchlib.other_load import OtherLoad
from benchlib.runs import Run, Settings
from benchlib.steady import measure_steady
from benchlib.workloads import WORKLOADS

from mirrorline.devlatency import Link

WAN_CONTENDERS = ("mirrorline_alo", "mirrorline_rt", BASELINE, "copy_loop")
WAN_WORKLOADS = ("backlog_1k", "steady_5k")
# The source consumer's TCP receive buffer, left to the OS (Mirrorline's default for that
# client; MM2's is a fixed 64 KiB), written into both files so they read alike. Toxiproxy
# ends TCP on loopback, so here it changes nothing; on a real WAN it bounds a connection's
# bytes per round trip. See RESULTS.md, "WAN".
WAN_LINES = (f"{SOURCE}.consumer.receive.buffer.bytes = -1",)


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma list of milliseconds: {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError("give round trips of 0 ms or more")
    return values


def parse_options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Mirrorline and MirrorMaker 2 reading a source cluster across a "
        "simulated WAN link (the replicator near the target)."
    )
    parser.add_argument(
        "--latencies",
        type=_ints,
        default=[25, 50, 100, 200],
        help="round trips, ms (25,50,100,200)",
    )
    parser.add_argument("--jitter-ms", type=int, default=0, help="the link's jitter (0)")
    parser.add_argument(
        "--records", type=int, default=200_000, help="records of the backlog (%(default)s)"
    )
    parser.add_argument("--partitions", type=int, default=8, help="partitions (%(default)s)")
    parser.add_argument(
        "--workloads",
        type=lambda t: names_among(t, WAN_WORKLOADS, "workload"),
        default=list(WAN_WORKLOADS),
        help=f"comma list of {','.join(WAN_WORKLOADS)}",
    )
    parser.add_argument(
        "--contenders",
        type=lambda t: names_among(t, WAN_CONTENDERS, "contender"),
        default=list(WAN_CONTENDERS),
        help=f"comma list of {','.join(WAN_CONTENDERS)} (ratios need {BASELINE})",
    )
    parser.add_argument(
        "--steady-seconds", type=float, default=30, help="measured steady window, s (30)"
    )
    parser.add_argument(
        "--warmup-seconds", type=float, default=20, help="discarded steady start, s (20)"
    )
    parser.add_argument(
        "--warm-up-records", type=int, default=100_000, help="written/read per cluster first"
    )
    parser.add_argument("--timeout", type=float, default=600, help="longest run, s (600)")
    parser.add_argument("--no-save", action="store_true", help="print only; no results file")
    parser.add_argument("--work-dir", type=Path, help="clusters and logs (default: temporary)")
    args = parser.parse_args(argv)
    if args.records < args.partitions or args.partitions < 1:
        parser.error("--records must be at least --partitions, and --partitions at least 1")
    return args


def _mirrorline_settings(contenders: list[str], work: Path, bootstrap: dict, tasks: int) -> dict:
    """Each Mirrorline contender's effective data-path settings (`mirrorline config check`),
    which must be the DATA_PATH block: the run fails otherwise."""
    verified = {}
    for name in contenders:
        if CONTENDERS[name].kind != "mirrorline":
            continue
        path = work / "configs" / f"check-{name}.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            config_text(CONTENDERS[name], bootstrap, "wan-check", "check", tasks, WAN_LINES)
        )
        verified[name] = client_check.check_mirrorline(CONTENDERS[name], path)
    return verified


def run_latency(args, latency_ms: int, work: Path, load: OtherLoad) -> dict:
    link = Link(latency_ms, args.jitter_ms)
    settings = Settings(
        records=args.records,
        partitions=args.partitions,
        tasks_max=args.partitions,
        latency_seconds=args.steady_seconds,
        warmup_seconds=args.warmup_seconds,
        timeout=args.timeout,
        quiet_timeout=0,
    )
    say(f"=== {SOURCE} behind a link of {link.describe()}")
    (work / "logs").mkdir(parents=True, exist_ok=True)
    results: dict = {"link": asdict(link), "workloads": {}}
    with clusters_running(work / "clusters", source_link=link) as clusters:
        bootstrap = {SOURCE: clusters[0].bootstrap_servers, TARGET: clusters[1].bootstrap_servers}
        verified = _mirrorline_settings(args.contenders, work, bootstrap, settings.tasks_max)
        warm_up(clusters, min(args.warm_up_records, args.records), args.partitions)
        for workload_name in args.workloads:
            workload = WORKLOADS[workload_name]
            say(f"== {latency_ms} ms, {workload_name}: {workload.description}")
            measured = {}
            for name in args.contenders:
                one = Run(
                    CONTENDERS[name], workload, clusters, work, settings, load, verified, WAN_LINES
                )
                measure = measure_backlog if workload.kind == "backlog" else measure_steady
                measured[name] = measure(one)
                one.clean_up()
            results["workloads"][workload_name] = {
                "contenders": measured,
                **report.ratios(measured),
            }
    return results


def configurations(args) -> dict[str, str]:
    bootstrap = {SOURCE: "<east through the link>", TARGET: "<west>"}
    texts = {}
    for name in args.contenders:
        texts[name] = config_text(
            CONTENDERS[name], bootstrap, "<topic>", "<run>", args.partitions, WAN_LINES
        )
        say(f"configuration of {name} ({CONTENDERS[name].label}):")
        print("    " + texts[name].rstrip().replace("\n", "\n    "), flush=True)
    return texts


def run(args, command: str) -> dict:
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="mirrorline-wan-"))
    say(f"work directory (clusters, logs): {work}")
    began, load, failed = time.monotonic(), OtherLoad(), True
    by_latency = {}
    try:
        texts = configurations(args)
        for latency in args.latencies:
            by_latency[str(latency)] = run_latency(args, latency, work / f"{latency}ms", load)
        failed = False
    finally:
        load.stop()
        if failed:
            say(f"kept {work} (logs under {work}/*/logs)")
        elif args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    now = dt.datetime.now()
    return {
        "name": f"wan-{now:%Y-%m-%d-%H%M}",
        "date": now.strftime("%Y-%m-%d %H:%M"),
        "command": command,
        "duration_s": round(time.monotonic() - began, 1),
        "settings": {
            "latencies_ms": args.latencies,
            "jitter_ms": args.jitter_ms,
            "records": args.records,
            "partitions": args.partitions,
            "tasks_max": args.partitions,
            "steady_seconds": args.steady_seconds,
            "warmup_seconds": args.warmup_seconds,
            "workloads": {w: asdict(WORKLOADS[w]) for w in args.workloads},
            "contenders": {c: asdict(CONTENDERS[c]) for c in args.contenders},
            "baseline": BASELINE,
            "data_path": {"producer": DATA_PATH_PRODUCER, "consumer": DATA_PATH_CONSUMER},
            "wan_lines": list(WAN_LINES),
            "configurations": texts,
        },
        "environment": environment(),
        "latencies": by_latency,
    }


def summary_table(result: dict) -> str:
    """One row per round trip and workload: each contender's records/s, MB/s (and record
    age for the steady load), and Mirrorline / MM2."""
    lines = [
        "| round trip | workload | contender | records/s | MB/s | age p50 ms | age p99 ms "
        "| records/s vs MM2 tuned |",
        "|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for latency, at in result["latencies"].items():
        for workload, numbers in at["workloads"].items():
            for name, c in numbers["contenders"].items():
                ratio = numbers["ratios"].get(name)
                lines.append(
                    f"| {latency} ms | {workload} | {CONTENDERS[name].label} "
                    f"| {c['throughput_rps']:,.0f} | {c['mb_s']:.1f} "
                    f"| {c['age_p50_ms'] if c['age_p50_ms'] is not None else '-'} "
                    f"| {c['age_p99_ms'] if c['age_p99_ms'] is not None else '-'} "
                    f"| {f'{ratio:.2f}' if ratio is not None else 'n/a'} |"
                )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = parse_options(argv)
    command = recorded_command("wan_throughput.py", argv)

    stop_on_sigterm()
    try:
        result = run(args, command)
    except BenchmarkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print()
    print(report.data_path_text())
    print(f"Both files also set: {'; '.join(WAN_LINES)}.")
    print()
    print(summary_table(result))
    print()
    print(environment_text(result["environment"]))
    print(f"The run took {result['duration_s'] / 60:.1f} minutes.")
    if not args.no_save:
        path = BENCH_DIR / "results" / f"{result['name']}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {path.relative_to(BENCH_DIR.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
