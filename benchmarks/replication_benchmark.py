#!/usr/bin/env python3
"""Mirrorline next to MirrorMaker 2 and a bare copy loop: throughput, CPU, memory,
start-up and record age, on the same clusters and data, in one run.

Contenders (run one after the other, never concurrently, on two local Apache Kafka
clusters `east` -> `west`, whose brokers are warmed up first; each backlog workload
in rounds, see benchlib/rounds.py):

- mirrorline_alo: `mirrorline driver --config FILE`, at-least-once (the default);
- mirrorline_alo_quiet: the same with `emit.metrics.enabled = false`, to show
  what the flow's raw metrics cost the data path;
- mirrorline_eos: the same with `exactly.once.source.support = enabled`;
- mirrorline_rt: the same with `data.path.mode = real-time` (Spark's real-time
  mode, Mirrorline's low-latency mode), on `local[<partitions>]`;
- mm2_shipped: MirrorMaker 2 in dedicated mode with its shipped defaults;
- mm2_tuned: MirrorMaker 2 with the same data-path client settings as Mirrorline;
- copy_loop: a bare consume -> produce loop in one JVM (benchmarks/CopyLoop.java),
  the ceiling of this machine, with the same client settings.

Workloads: backlog_1k, backlog_100b, backlog_lz4 (pre-loaded backlogs) and
steady_5k (a paced stream; record age at the target). Every number is also given
as a ratio to mm2_tuned. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import benchlib  # noqa: F401  (puts this checkout's src/ first on the path)
from benchlib import broker_storage, chart, client_check, machine_speed, report
from benchlib.backlog import measure_backlog
from benchlib.common import (
    BENCH_DIR,
    REPO,
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
from benchlib.environment import environment
from benchlib.kafka_data import clusters_running, dev_clusters_running, warm_up
from benchlib.markers import replace_block
from benchlib.other_load import OtherLoad
from benchlib.rounds import combine, order
from benchlib.runs import Run, Settings
from benchlib.steady import measure_interleaved, measure_steady
from benchlib.workloads import WORKLOADS

from mirrorline.devbroker import jvm_profile

RESULTS_MARKERS = ("<!-- benchmark:start -->", "<!-- benchmark:end -->")
README_MARKERS = ("<!-- benchmark-table:start -->", "<!-- benchmark-table:end -->")
# Records each broker writes and serves before the first measured run (see `warm_up`):
# enough for its compiler to settle, measured with 1 KiB records on this machine.
WARM_UP_RECORDS = 500_000


def parse_options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Compare Mirrorline, MirrorMaker 2 and a copy loop on local clusters.",
    )
    parser.add_argument(
        "--records", type=int, default=1_000_000, help="records per backlog (%(default)s)"
    )
    parser.add_argument(
        "--latency-seconds",
        type=float,
        default=60,
        help="measured part of the steady workload, seconds (%(default)s)",
    )
    parser.add_argument(
        "--warmup-seconds",
        type=float,
        help="discarded start of the steady workload, the same for every contender "
        "(default: 75, or --latency-seconds in a quick run of under 60: the JVMs' "
        "compilers and Spark's first batches take about half a minute to settle here)",
    )
    parser.add_argument(
        "--workloads",
        type=lambda t: names_among(t, WORKLOADS, "workload"),
        default=list(WORKLOADS),
        help=f"comma list (default: all of {','.join(WORKLOADS)})",
    )
    parser.add_argument(
        "--contenders",
        type=lambda t: names_among(t, CONTENDERS, "contender"),
        default=list(CONTENDERS),
        help=f"comma list (default: all of {','.join(CONTENDERS)}); ratios need {BASELINE}",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of every backlog workload: each contender that many times, the order "
        "reversed every other round, each figure the median of the rounds (%(default)s)",
    )
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="run a steady workload's contenders at the same time, each on its own topic, "
        "taking turns with the load window by window, so that one's window is a minute "
        "from the other's, not a whole run (default: one after the other)",
    )
    parser.add_argument(
        "--partitions", type=int, default=8, help="partitions per topic (%(default)s)"
    )
    parser.add_argument(
        "--tasks-max", type=int, help="tasks.max for every replicator (default: --partitions)"
    )
    parser.add_argument(
        "--timeout", type=float, default=1800, help="longest run of one contender, s"
    )
    parser.add_argument(
        "--quiet-timeout",
        type=float,
        default=0,
        help="before each run, wait up to this many seconds for other processes to leave "
        "the cores alone (shared machines; default: no wait)",
    )
    parser.add_argument(
        "--no-save",
        action="store_true",
        help="print only: leave results/, RESULTS.md, chart.png and README.md alone",
    )
    parser.add_argument("--json", type=Path, help="also write the results JSON to this path")
    parser.add_argument("--work-dir", type=Path, help="clusters and logs (default: temporary)")
    parser.add_argument(
        "--keep-work-dir", action="store_true", help="keep clusters' data and logs afterwards"
    )
    parser.add_argument(
        "--max-poll-records",
        type=int,
        default=int(DATA_PATH_CONSUMER["max.poll.records"]),
        help="max.poll.records of every tuned contender's source consumer (%(default)s, "
        "MM2's default); Mirrorline's micro-batches are sized by time whatever it is",
    )
    parser.add_argument(
        "--dev-clusters",
        type=Path,
        metavar="DIR",
        help="measure on the clusters `east` and `west` that `mirrorline dev up --dir DIR` "
        "started (data on disk, left running) instead of the benchmark's own brokers",
    )
    parser.add_argument(
        "--brokers-on-disk",
        action="store_true",
        help="keep the brokers' data in the work directory even when memory has room for it "
        "(see benchlib/broker_storage.py)",
    )
    args = parser.parse_args(argv)
    if args.records < args.partitions or args.partitions < 1:
        parser.error("--records must be at least --partitions, and --partitions at least 1")
    if args.latency_seconds <= 0:
        parser.error("--latency-seconds must be > 0")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.max_poll_records < 1:
        parser.error("--max-poll-records must be at least 1")
    DATA_PATH_CONSUMER["max.poll.records"] = str(args.max_poll_records)
    if args.warmup_seconds is None:
        args.warmup_seconds = 75.0 if args.latency_seconds >= 60 else args.latency_seconds
    return args


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        records=args.records,
        partitions=args.partitions,
        tasks_max=args.tasks_max or args.partitions,
        latency_seconds=args.latency_seconds,
        warmup_seconds=args.warmup_seconds,
        timeout=args.timeout,
        quiet_timeout=args.quiet_timeout,
        rounds=args.rounds,
        interleave=args.interleave,
    )


def show_configurations(args, settings: Settings, bootstrap: dict[str, str]) -> dict[str, str]:
    """Print every contender's file (topic and run names as placeholders) and return them."""
    texts = {}
    for name in args.contenders:
        texts[name] = config_text(
            CONTENDERS[name], bootstrap, "<topic>", "<run>", settings.tasks_max
        )
        say(f"configuration of {name} ({CONTENDERS[name].label}):")
        print("    " + texts[name].rstrip().replace("\n", "\n    "), flush=True)
    return texts


def check_mirrorline_settings(args, settings: Settings, work: Path, bootstrap) -> dict:
    """`mirrorline config check --json` on each Mirrorline contender's file: its effective
    data-path settings must be the benchmark's block (fails the run otherwise)."""
    verified = {}
    for name in args.contenders:
        contender = CONTENDERS[name]
        if contender.kind != "mirrorline":
            continue
        path = work / "configs" / f"check-{name}.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            config_text(contender, bootstrap, "bench-check", "check", settings.tasks_max)
        )
        verified[name] = client_check.check_mirrorline(contender, path)
        say(f"{name}: `mirrorline config check --json` shows the data-path settings in effect")
    return verified


def warm_up_java_clients(clusters: list, work: Path, settings: Settings, load: OtherLoad) -> None:
    """The copy loop copies a backlog once, unmeasured, before the first measured run.

    `warm_up` exercises the brokers with librdkafka's clients; every contender but
    the copy loop's own is a Java client, which the brokers serve through paths of
    their own (incremental fetch sessions, the Java producer's requests). Without
    this, the first Java contender of a run meets those paths cold and warms them
    for every later one.
    """
    began = time.monotonic()
    workload = replace(WORKLOADS["backlog_1k"], name="warm_up")
    unmeasured = replace(settings, records=min(settings.records, WARM_UP_RECORDS))
    one = Run(CONTENDERS["copy_loop"], workload, clusters, work, unmeasured, load)
    measure_backlog(one)
    one.clean_up()
    say(f"brokers' Java client paths warmed up by the copy loop in {time.monotonic() - began:.1f}s")


def measure_workload(names, workload, clusters, work, settings, load, verified) -> dict:
    """Every contender's numbers on one workload; a backlog workload in rounds."""
    if workload.kind == "steady" and settings.interleave:
        together = [
            Run(CONTENDERS[name], workload, clusters, work, settings, load, verified)
            for name in names
        ]
        measured = measure_interleaved(together)
        for one in together:
            one.clean_up()
        return dict(zip(names, measured, strict=True))
    rounds = settings.rounds if workload.kind == "backlog" else 1
    measure = measure_backlog if workload.kind == "backlog" else measure_steady
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for index in range(rounds):
        if rounds > 1:
            say(f"round {index + 1} of {rounds}")
        for name in order(names, index):
            contender = CONTENDERS[name]
            one = Run(
                contender, workload, clusters, work, settings, load, verified, round_index=index
            )
            runs[name].append(measure(one))
            one.clean_up()
    return {name: combine(runs[name]) for name in names}


def run(args, command: str) -> dict:
    settings = _settings(args)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="mirrorline-bench-"))
    (work / "logs").mkdir(parents=True, exist_ok=True)
    say(f"work directory (clusters, logs): {work}")
    if args.dev_clusters is not None:
        brokers_dir, brokers_where = work, f"`mirrorline dev up --dir {args.dev_clusters}`"
        running = dev_clusters_running(args.dev_clusters)
    else:
        need = broker_storage.room_needed(settings, [WORKLOADS[w] for w in args.workloads])
        brokers_dir, brokers_where = broker_storage.choose(work, need, args.brokers_on_disk)
        running = clusters_running(brokers_dir)
    speed_before = machine_speed.sample()
    began = time.monotonic()
    results: dict = {}
    failed = True
    load = OtherLoad()
    try:
        with running as clusters:
            bootstrap = {
                SOURCE: clusters[0].bootstrap_servers,
                TARGET: clusters[1].bootstrap_servers,
            }
            configurations = show_configurations(args, settings, bootstrap)
            verified = check_mirrorline_settings(args, settings, work, bootstrap)
            warm_up(clusters, min(settings.records, WARM_UP_RECORDS), settings.partitions)
            warm_up_java_clients(clusters, work, settings, load)
            for workload_name in args.workloads:
                workload = WORKLOADS[workload_name]
                say(f"== {workload_name}: {workload.description}")
                measured = measure_workload(
                    args.contenders, workload, clusters, work, settings, load, verified
                )
                results[workload_name] = {
                    "description": workload.description,
                    "contenders": measured,
                    **report.ratios(measured),
                }
        failed = False
    finally:
        load.stop()
        broker_storage.release(brokers_dir, work, keep_logs=failed or args.keep_work_dir)
        if failed or args.keep_work_dir:
            say(f"kept {work} (logs in {work / 'logs'})")
        elif args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    speed_after = machine_speed.sample()
    now = dt.datetime.now()
    shipped = [
        r["contenders"]["mm2_shipped"] for r in results.values() if "mm2_shipped" in r["contenders"]
    ]
    return {
        "name": f"replication-{now:%Y-%m-%d-%H%M}",
        "date": now.strftime("%Y-%m-%d %H:%M"),
        "command": command,
        "duration_s": round(time.monotonic() - began, 1),
        "settings": {
            **asdict(settings),
            "brokers_data": brokers_where,
            "brokers_jvm": " ".join(jvm_profile()),
            "workloads": {w: asdict(WORKLOADS[w]) for w in args.workloads},
            "contenders": {c: asdict(CONTENDERS[c]) for c in args.contenders},
            "baseline": BASELINE,
            "data_path": {"producer": DATA_PATH_PRODUCER, "consumer": DATA_PATH_CONSUMER},
            "configurations": configurations,
            "mirrorline_effective": verified,
            "mm2_shipped_effective": shipped[0]["client_settings"] if shipped else None,
        },
        "environment": environment(),
        "machine_speed": {"before": speed_before, "after": speed_after},
        "workloads": results,
    }


def save(result: dict) -> list[str]:
    """Write the JSON, the chart, RESULTS.md's block and the README's table."""
    results_dir = BENCH_DIR / "results"
    results_dir.mkdir(exist_ok=True)
    json_path = results_dir / f"{result['name']}.json"
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    png = results_dir / f"{result['name']}.png"
    chart.draw(result, png)
    shutil.copyfile(png, BENCH_DIR / "chart.png")
    replace_block(BENCH_DIR / "RESULTS.md", *RESULTS_MARKERS, report.results_section(result))
    replace_block(REPO / "README.md", *README_MARKERS, report.readme_section(result))
    return [str(p.relative_to(REPO)) for p in (json_path, png, BENCH_DIR / "chart.png")] + [
        "benchmarks/RESULTS.md",
        "README.md",
    ]


def main(argv: list[str]) -> int:
    args = parse_options(argv)
    command = recorded_command("replication_benchmark.py", argv)

    stop_on_sigterm()
    try:
        result = run(args, command)
    except BenchmarkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print()
    print(report.settings_text(result))
    print()
    print("\n".join(report.speed_lines(result)))
    print(report.data_path_text())
    print()
    print(report.tables_text(result))
    print()
    print(f"The run took {result['duration_s'] / 60:.1f} minutes.")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")
    if not args.no_save:
        try:
            print("wrote " + ", ".join(save(result)))
        except BenchmarkError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
