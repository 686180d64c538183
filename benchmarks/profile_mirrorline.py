#!/usr/bin/env python3
"""Where a Mirrorline flow spends its time: Spark's trigger phases, the driver's
per-batch work and the executors' writer, measured on local clusters.

It runs Mirrorline's own `Driver` in this process, on the same Spark session
settings as `mirrorline driver`, and times from the outside, without changing
Mirrorline's code:

- Spark's progress events: per micro-batch `triggerExecution` and its parts
  (`latestOffset`, `queryPlanning`, `walCommit`, `addBatch`, `commitOffsets`);
- the driver's batch function (`DataPath._on_batch`), and the bookkeeping its
  committer writes meanwhile (`BatchCommitter._apply`): the offset-sync
  publishing and the progress save;
- the executors' writer (`write_batches`), per task: waiting for Arrow input
  (the JVM reading Kafka and converting), the Python produce loop, the wait for
  acknowledgements (`flush`) and the summary;
- CPU time per process (driver, Spark JVM, Python workers).

Two workloads: `--mode backlog` replicates `--records` pre-loaded records (the
throughput case); `--mode steady` replicates `--rate` records/s for `--seconds`
(the latency case).

    python benchmarks/profile_mirrorline.py --mode backlog --records 300000
    python benchmarks/profile_mirrorline.py --mode steady --rate 5000 --seconds 40
    python benchmarks/profile_mirrorline.py --mode steady --tasks-max 2 --skip-zip-invalidation
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402, F401  (puts this checkout's src first)
from benchlib import procs  # noqa: E402
from benchlib.common import REPO, SOURCE, say, wait_for  # noqa: E402
from benchlib.kafka_data import (  # noqa: E402
    OffsetWatcher,
    clusters_running,
    create_topic,
    paced_producer,
    preload,
    random_values,
)
from benchlib.procs import OtherLoad, TreeSampler  # noqa: E402
from benchlib.replicators import write_replication_config  # noqa: E402

import mirrorline.engine.batch_writer as batch_writer  # noqa: E402
from mirrorline.config import load_config  # noqa: E402
from mirrorline.driver import Driver, select_flows  # noqa: E402
from mirrorline.engine.batch_commit import BatchCommitter  # noqa: E402
from mirrorline.engine.data_path import DataPath  # noqa: E402
from mirrorline.engine.offset_syncs import OffsetSyncPublisher  # noqa: E402
from mirrorline.engine.progress import ProgressStore  # noqa: E402

TASK_LOG_ENV = "MIRRORLINE_PROFILE_TASK_LOG"
SKIP_ZIP_ENV = "MIRRORLINE_PROFILE_SKIP_ZIP_INVALIDATION"
# This process is the driver here; the load producer is a spawned child.
procs.ROLES[:0] = [
    ("profile_mirrorline.py", "Python driver"),
    ("multiprocessing", "load producer"),
]


@dataclass(frozen=True)
class ProfileOptions:
    records: int
    record_size: int
    partitions: int
    tasks_max: int
    quiet_timeout: float


SPARK_PHASES = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")


# -- executor side ---------------------------------------------------------------------


def timed_write_batches(batches, spec):
    """`write_batches` with a stopwatch around its parts; one JSON line per task.

    Defined in this script, so Spark ships it to the Python workers by value; it
    wraps the writer's module functions in the worker, then runs the real writer.
    """
    from mirrorline.engine import writer

    if os.environ.get(SKIP_ZIP_ENV) == "1":
        # Experiment: PySpark's worker calls importlib.invalidate_caches() before
        # every task; on Python < 3.13 that re-reads pyspark.zip's directory once
        # per package imported from it. Skipping it shows what that costs.
        import zipimport

        zipimport.zipimporter.invalidate_caches = lambda self: None
    timings = {"input_s": 0.0, "produce_s": 0.0, "summary_s": 0.0, "records": 0}
    if not getattr(writer, "_profiled", False):
        produce_batch, summary = writer._produce_batch, writer._summary

        def timed_produce(producer, batch, *args, **kwargs):
            began = time.perf_counter()
            try:
                return produce_batch(producer, batch, *args, **kwargs)
            finally:
                writer._timings["produce_s"] += time.perf_counter() - began
                writer._timings["records"] += batch.num_rows

        def timed_summary(*args, **kwargs):
            began = time.perf_counter()
            try:
                return summary(*args, **kwargs)
            finally:
                writer._timings["summary_s"] += time.perf_counter() - began

        writer._produce_batch, writer._summary = timed_produce, timed_summary
        writer._profiled = True
    writer._timings = timings

    def timed_input():
        source = iter(batches)
        while True:
            began = time.perf_counter()
            try:
                batch = next(source)
            except StopIteration:
                timings["input_s"] += time.perf_counter() - began
                return
            timings["input_s"] += time.perf_counter() - began
            yield batch

    started = time.perf_counter()
    started_wall = time.time()
    yield from writer.write_batches(timed_input(), spec)
    timings["total_s"] = time.perf_counter() - started
    # What is left is waiting for the target's acknowledgements (flush).
    timings["flush_s"] = (
        timings["total_s"] - timings["input_s"] - timings["produce_s"] - timings["summary_s"]
    )
    timings.update(pid=os.getpid(), started=started_wall)
    with open(os.environ[TASK_LOG_ENV], "a") as log:
        log.write(json.dumps(timings) + "\n")


# -- driver side -----------------------------------------------------------------------


class Stopwatch:
    """Total seconds and call count per name, from any thread."""

    def __init__(self) -> None:
        self.totals: dict[str, list[float]] = defaultdict(list)
        self._lock = threading.Lock()

    def wrap(self, name: str, function):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                with self._lock:
                    self.totals[name].append(time.perf_counter() - began)

        return timed


def instrument(watch: Stopwatch) -> None:
    """Wrap the driver's per-batch work and ship the timed writer to executors."""
    DataPath._on_batch = watch.wrap("on_batch", DataPath._on_batch)
    BatchCommitter._apply = watch.wrap("commit", BatchCommitter._apply)
    OffsetSyncPublisher.publish = watch.wrap("publish_offset_syncs", OffsetSyncPublisher.publish)
    ProgressStore.save = watch.wrap("save_progress", ProgressStore.save)
    batch_writer.write_batches = timed_write_batches


def progress_listener(spark, progress: list[dict]):
    from pyspark.sql.streaming import StreamingQueryListener

    class Listener(StreamingQueryListener):
        def onQueryStarted(self, event) -> None:
            pass

        def onQueryProgress(self, event) -> None:
            p = event.progress
            progress.append(
                {"batch": p.batchId, "rows": p.numInputRows, **dict(p.durationMs or {})}
            )

        def onQueryIdle(self, event) -> None:
            pass

        def onQueryTerminated(self, event) -> None:
            pass

    spark.streams.addListener(Listener())


# -- the run ---------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("backlog", "steady"), default="backlog")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--record-size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--tasks-max", type=int, help="default: the partition count")
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="experiment: a Spark setting on top of Mirrorline's session defaults (repeatable)",
    )
    parser.add_argument(
        "--skip-zip-invalidation",
        action="store_true",
        help="experiment: make zipimport's cache invalidation a no-op in the Python workers "
        "(from each worker's first task on), to measure its cost",
    )
    parser.add_argument(
        "--quiet-timeout",
        type=float,
        default=0,
        help="first wait up to this many seconds for other processes to leave the cores alone",
    )
    args = parser.parse_args(argv)

    def terminate(signum, _frame) -> None:
        raise SystemExit(f"stopped by {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, terminate)  # so that clusters and files are cleaned up
    opts = ProfileOptions(
        records=args.records,
        record_size=args.record_size,
        partitions=args.partitions,
        tasks_max=args.tasks_max or args.partitions,
        quiet_timeout=args.quiet_timeout,
    )
    with tempfile.TemporaryDirectory(prefix="mirrorline-profile-") as tmp:
        work = Path(tmp)
        os.environ[TASK_LOG_ENV] = str(work / "tasks.jsonl")  # inherited by the workers
        os.environ[SKIP_ZIP_ENV] = "1" if args.skip_zip_invalidation else "0"
        # Spark's Python workers must import this checkout's Mirrorline too.
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p
        )
        os.chdir(work)  # Spark leaves an artifacts/ directory in the working directory
        with clusters_running(work) as clusters:
            report = profile(args, opts, clusters, work)
    print(report)
    return 0


def profile(args, opts: ProfileOptions, clusters, work: Path) -> str:
    from mirrorline.engine.session import build_spark_session

    source, target = clusters
    topic = "profile"
    create_topic(source.bootstrap_servers, topic, opts.partitions)
    if args.mode == "backlog":
        say(f"pre-loading {opts.records:,} records")
        preload(
            source.bootstrap_servers,
            [topic],
            records=opts.records,
            partitions=opts.partitions,
            value=random_values(seed=1, size=opts.record_size),
        )
    config = write_replication_config(work / "profile.properties", clusters, topic, opts.tasks_max)
    load = OtherLoad()
    load.wait_quiet(opts.quiet_timeout)
    watch = Stopwatch()
    instrument(watch)
    spark = build_spark_session(
        app_name="mirrorline profile", conf=dict(kv.split("=", 1) for kv in args.spark_conf)
    )
    progress: list[dict] = []
    progress_listener(spark, progress)
    sampler = TreeSampler(os.getpid()).start()
    driver = Driver(select_flows(load_config(config), None), spark, work / "driver")
    stop = threading.Event()
    thread = threading.Thread(target=driver.run, args=(stop,), daemon=True)
    watcher = OffsetWatcher(target.bootstrap_servers)
    remote = f"{SOURCE}.{topic}"
    window: dict = {}

    def start_window() -> None:
        """From here on count batches, tasks and CPU time."""
        progress.clear()
        (work / "tasks.jsonl").write_text("")
        watch.totals.clear()
        window.update(began=time.monotonic(), cpu=sampler.cpu_seconds_by_role(), other=load.mark())

    thread.start()
    try:
        if args.mode == "backlog":
            wait_for(
                lambda: sum(watcher.end_offsets(remote).values()) > 0,
                timeout=300,
                what="the first replicated record",
            )
            start_window()
            wait_for(
                lambda: sum(watcher.end_offsets(remote).values()) >= opts.records,
                timeout=1800,
                what=f"{opts.records:,} replicated records",
            )
        else:
            steady_load(args, source, watcher, remote, start_window)
        window.update(
            ended=time.monotonic(),
            cpu_after=sampler.cpu_seconds_by_role(),
            other_cores=load.cores_since(window["other"]),
        )
    finally:
        load.stop()
        stop.set()
        thread.join(120)
        watcher.close()
        sampler.stop()
        spark.stop()
    return render(args, opts, watch, progress, work, window)


def steady_load(args, source, watcher, remote, start_window) -> None:
    """Produce `--rate` records/s: 10 s warm-up, `--seconds` measured, then drain."""
    spawn = multiprocessing.get_context("spawn")
    go, stop, results = spawn.Event(), spawn.Event(), spawn.Queue()
    producer = spawn.Process(
        target=paced_producer,
        args=(source.bootstrap_servers, "profile", args.partitions, args.record_size, args.rate)
        + (go, stop, results),
        daemon=True,
    )
    producer.start()
    try:
        wait_for(
            lambda: sum(watcher.end_offsets(remote).values()) > 0,
            timeout=300,
            what="the first replicated record",
        )
        go.set()
        time.sleep(10)  # the workload's warm-up period, not synchronisation
        start_window()
        time.sleep(args.seconds)  # the workload's measured period
        stop.set()
        produced = results.get(timeout=120)["produced"]
        wait_for(
            lambda: sum(watcher.end_offsets(remote).values()) >= produced,
            timeout=600,
            what=f"{produced:,} replicated records",
        )
    finally:
        stop.set()
        producer.join(30)


def render(args, opts, watch, progress, work, window: dict) -> str:
    tasks = [json.loads(line) for line in (work / "tasks.jsonl").read_text().splitlines()]
    tasks = [t for t in tasks if t["records"] > 0]
    experiment = "".join(f", {kv}" for kv in args.spark_conf)
    experiment += ", zip cache invalidation skipped" if args.skip_zip_invalidation else ""
    lines = [f"## Mirrorline profile: {args.mode}, tasks.max {opts.tasks_max}{experiment}", ""]
    seconds = window["ended"] - window["began"]
    if args.mode == "backlog":
        lines.append(
            f"{opts.records:,} records of {opts.record_size} B over {opts.partitions} partitions "
            f"in {seconds:.1f} s after the first record ({opts.records / seconds:,.0f} records/s)."
        )
    else:
        lines.append(
            f"{args.rate:,} records/s of {opts.record_size} B over {opts.partitions} partitions: "
            f"{seconds:.0f} s from the end of a 10 s warm-up until the last record arrived."
        )
    batches = [p for p in progress if p["rows"] > 0]
    lines += ["", f"Micro-batches with records: {len(batches)} (of {len(progress)} triggers)", ""]
    lines += [
        "| Spark trigger phase | total s | mean ms per batch | median ms |",
        "|---|---|---|---|",
    ]
    for phase in ("triggerExecution", *SPARK_PHASES):
        values = [p.get(phase, 0) for p in batches]
        if values:
            lines.append(
                f"| {phase} | {sum(values) / 1000:.1f} | {statistics.mean(values):,.0f} "
                f"| {statistics.median(values):,.0f} |"
            )
    rows = [p["rows"] for p in batches]
    if rows:
        lines += ["", f"Records per batch: mean {statistics.mean(rows):,.0f}, max {max(rows):,}."]
    lines += ["", "| driver, per batch | calls | total s | mean ms |", "|---|---|---|---|"]
    for name, values in sorted(watch.totals.items()):
        mean_ms = statistics.mean(values) * 1000
        lines.append(f"| {name} | {len(values)} | {sum(values):.1f} | {mean_ms:,.0f} |")
    if tasks:
        lines += [
            "",
            f"Executor tasks with records: {len(tasks)}, "
            f"{statistics.mean(t['records'] for t in tasks):,.0f} records each on average, "
            f"run by {len({t['pid'] for t in tasks})} Python worker processes.",
            "",
            "| executor task part | total s (all tasks) | share | per 1,000 records, ms |",
            "|---|---|---|---|",
        ]
        total = sum(t["total_s"] for t in tasks)
        records = sum(t["records"] for t in tasks)
        for part in ("input_s", "produce_s", "flush_s", "summary_s", "total_s"):
            spent = sum(t[part] for t in tasks)
            lines.append(
                f"| {part[:-2]} | {spent:.1f} | {spent / total:.0%} "
                f"| {spent / records * 1000 * 1000:.2f} |"
            )
    lines += ["", "| process | CPU s in the window | cores |", "|---|---|---|"]
    for role, after in sorted(window["cpu_after"].items()):
        spent = after - window["cpu"].get(role, 0.0)
        if spent >= 0.05:
            lines.append(f"| {role} | {spent:.1f} | {spent / seconds:.2f} |")
    lines.append(f"| other processes on the machine | | {window['other_cores']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
