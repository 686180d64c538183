#!/usr/bin/env python3
"""How Mirrorline's throughput grows with executor cores on a Spark standalone cluster.

For each cluster layout (`WORKERSxCORES`: 1x1 is one worker of one core, 2x1 two
workers of one core each) a fresh standalone cluster is started from the
installed PySpark (`tests/support/spark_standalone.py`), `mirrorline driver
--master spark://...` replicates a pre-loaded topic from `east` to `west`, and the
rate is taken from the first record on the target to the last (target end offsets
polled every 0.1 s), as in `replication_benchmark.py`. Every layout gets its own
source topic with the same records, loaded right before it and deleted after it.
With `--repeats`, every other pass runs the layouts in reverse order, and each
layout is compared with the first layout of its own pass. CPU seconds of the
driver's process tree and of the workers' trees (the workers and their executors)
are sampled from /proc.

On a 2-core machine uncapped executors saturate both cores; `--cpu-cap 0.4`
caps each worker and its executors at 0.4 cores (`benchlib/cpu_cap.py`), so
that `--layouts 1x1,2x1,3x1` shows what more executors add while the machine
has room left. `--warm-up-records N` measures executors that have already
copied N records (the flow is paused while the measured records are loaded).
`--data-path-mode real-time` measures the flow in Spark's real-time mode, whose
long-running tasks (one per source partition, so every layout needs a slot for
each: 1x6,2x3,3x2 for 6 partitions) never wait for each other at the end of a
micro-batch.

Run `python benchmarks/standalone_scaling.py --help`; results go to
`benchmarks/results/standalone-scaling-<date>.json` and are summarised in
docs/spark-clusters.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
# Measure the Mirrorline of this checkout; the cluster module lives with the tests.
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from benchlib.common import (  # noqa: E402
    POLL_S,
    SOURCE,
    TARGET,
    BenchmarkError,
    recorded_command,
    say,
    wait_for,
)
from benchlib.cpu_cap import CpuCap, CpuCapError  # noqa: E402
from benchlib.environment import environment  # noqa: E402
from benchlib.kafka_data import (  # noqa: E402
    OffsetWatcher,
    clusters_running,
    create_topic,
    delete_topics,
    preload,
    random_values,
)
from benchlib.other_load import OtherLoad  # noqa: E402
from benchlib.procs import SampledProcess, TreeSampler  # noqa: E402
from benchlib.replicators import mirrorline_command, write_replication_config  # noqa: E402

from support.spark_standalone import StandaloneCluster  # noqa: E402


def parse_layout(text: str) -> tuple[int, int]:
    workers, _, cores = text.partition("x")
    if not (workers.isdigit() and cores.isdigit() and int(workers) > 0 and int(cores) > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: expected WORKERSxCORES, like 2x1")
    return int(workers), int(cores)


def layout_name(layout: tuple[int, int]) -> str:
    """`WORKERSxCORES`, as `--layouts` takes it."""
    return f"{layout[0]}x{layout[1]}"


def remote_topic(topic: str) -> str:
    """The copy of a source topic on the target."""
    return f"{SOURCE}.{topic}"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-size", type=int, default=100, help="value bytes")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument(
        "--layouts",
        type=lambda t: [parse_layout(x) for x in t.split(",")],
        default=[(1, 1), (2, 1)],
        help="cluster layouts to compare, WORKERSxCORES, comma separated (default 1x1,2x1)",
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="measure the layouts in turn this many times"
    )
    parser.add_argument(
        "--cpu-cap",
        type=float,
        default=None,
        metavar="CORES",
        help="cap each worker and its executors at this many cores (cgroup v1 cpu "
        "controller), so the machine never saturates; brokers and driver stay uncapped",
    )
    parser.add_argument(
        "--micro-batch-ms",
        type=int,
        default=None,
        help="Mirrorline's micro-batch.duration.ms (default: its own, 5000); "
        "fewer, longer batches pay the fixed cost of a batch fewer times",
    )
    parser.add_argument(
        "--data-path-mode",
        choices=("micro-batch", "real-time"),
        default="micro-batch",
        help="the flow's data.path.mode (default micro-batch); in real-time mode every "
        "layout needs a task slot per source partition (WORKERS x CORES >= --partitions)",
    )
    parser.add_argument(
        "--warm-up-records",
        type=int,
        default=0,
        help="copy this many records first, pause the flow (`mirrorline pause`), load the "
        "measured records and resume: the rate of executors that have run a while "
        "(default 0: executors start with the measured records)",
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the driver, as `mirrorline driver --spark-conf` (repeatable)",
    )
    parser.add_argument("--worker-memory", default="1g")
    parser.add_argument("--timeout", type=float, default=900, help="per layout, seconds")
    parser.add_argument("--no-save", action="store_true", help="print only")
    parser.add_argument("--keep-work-dir", action="store_true")
    args = parser.parse_args(argv)
    if args.data_path_mode == "real-time":
        short = [layout_name(x) for x in args.layouts if x[0] * x[1] < args.partitions]
        if short:
            parser.error(
                f"real-time mode needs a task slot per partition ({args.partitions}); "
                f"layouts {', '.join(short)} have fewer"
            )
    return args


def measure(
    layout: tuple[int, int], topic: str, clusters, work: Path, args: argparse.Namespace
) -> dict:
    workers, cores = layout
    name = layout_name(layout)
    say(f"layout {name}: {workers} worker(s) of {cores} core(s)")
    cluster = StandaloneCluster(
        work / f"spark-{name}", workers=workers, cores=cores, memory=args.worker_memory
    )
    target = OffsetWatcher(clusters[1].bootstrap_servers)
    remote = remote_topic(topic)
    load = OtherLoad()
    with cluster, ExitStack() as caps:
        workers_pids = [p for d, p in cluster.daemon_pids().items() if d.startswith("worker")]
        cap = caps.enter_context(CpuCap(args.cpu_cap)) if args.cpu_cap else None
        for pid in workers_pids if cap is not None else ():
            cap.add(pid)  # before the driver starts: executors inherit the worker's group
        executor_side = [TreeSampler(pid).start() for pid in workers_pids]
        config = write_replication_config(
            work / f"{name}.properties", clusters, topic, args.partitions
        )
        with config.open("a") as lines:
            lines.write(f"data.path.mode = {args.data_path_mode}\n")
            if args.micro_batch_ms is not None:
                lines.write(f"micro-batch.duration.ms = {args.micro_batch_ms}\n")
        command, env = mirrorline_command(config, work / f"driver-{name}")
        command += ["--master", cluster.master_url]
        for setting in args.spark_conf:
            command += ["--spark-conf", setting]
        proc = SampledProcess("Mirrorline", command, env, work / f"driver-{name}.log", work)
        began = load.mark()
        first = half = done = None
        executors_at_first: dict[str, float] = {}
        executors_at_done: dict[str, float] = {}
        try:
            warm = args.warm_up_records
            if warm:
                warm_up(proc, target, remote, config, env, topic, clusters, work, args)
            while done is None:
                now = time.monotonic()
                total = sum(target.end_offsets(remote).values()) - warm
                if first is None and total > 0:
                    first, first_mark = now, load.mark()
                    executors_at_first = executors_cpu_now(executor_side)
                    say(f"  first records on {TARGET} after {now - proc.started:.1f}s")
                if half is None and total >= args.records / 2:
                    half = now
                if total >= args.records:
                    done, done_mark = now, load.mark()
                    executors_at_done = executors_cpu_now(executor_side)
                proc.check()
                if now - proc.started > args.timeout:
                    raise BenchmarkError(
                        f"layout {name}: {total:,} of {args.records:,} records replicated in "
                        f"{args.timeout:.0f}s; see {proc.log_path}"
                    )
                time.sleep(POLL_S)
            throttled = cap.throttled() if cap is not None else {}
            other = load.cores_since(began)
            disturbed = load.disturbance_since(began)
            driver_cpu = proc.sampler.cpu_seconds()
            executors_cpu = sum(s.cpu_seconds() for s in executor_side)
        finally:
            stopped = proc.stop()
            for sampler in executor_side:
                sampler.stop()
            load.stop()
            target.close()
    transfer = max(done - first, POLL_S)
    # Everything the machine did while records moved (brokers and driver included): a
    # value near the core count means more executor cores had no CPU left to use.
    busy = (done_mark.cpu.machine_busy_s - first_mark.cpu.machine_busy_s) / max(
        done_mark.cpu.at - first_mark.cpu.at, POLL_S
    )
    in_transfer = {
        kind: round(seconds - executors_at_first.get(kind, 0.0), 1)
        for kind, seconds in sorted(executors_at_done.items())
    }
    result = {
        "layout": name,
        "workers": workers,
        "cores_per_worker": cores,
        "executor_cores": workers * cores,
        "startup_s": round(first - proc.started, 2),
        "transfer_s": round(transfer, 2),
        "records_per_s": round(args.records / transfer, 1),
        # The second half of the records alone: executors warmed up (JIT compiled).
        "records_per_s_second_half": round(
            (args.records - args.records // 2) / max(done - half, POLL_S), 1
        ),
        "cpu_s_driver": round(driver_cpu, 1),
        "cpu_s_workers_and_executors": round(executors_cpu, 1),
        # From the first copied record to the last, by what the threads do (JIT
        # compilers, garbage collector, tasks, ...); start-up is left out.
        "cpu_s_executors_in_transfer": round(sum(in_transfer.values()), 1),
        "executor_threads_cpu_s_in_transfer": in_transfer,
        "machine_busy_cores_in_transfer": round(busy, 2),
        "other_cpu_cores": other,
        "disturbed": disturbed,
        "graceful_stop": stopped.graceful,
        "cpu_cap_cores_per_worker": args.cpu_cap,
        "cap_throttled": throttled,
    }
    say(
        f"  {name}: {result['records_per_s']:,.0f} records/s, second half "
        f"{result['records_per_s_second_half']:,.0f} (transfer {result['transfer_s']}s, "
        f"startup {result['startup_s']}s; CPU s: driver {result['cpu_s_driver']}, "
        f"workers+executors {result['cpu_s_workers_and_executors']}, in transfer "
        f"{result['cpu_s_executors_in_transfer']} {in_transfer}; machine busy "
        f"{result['machine_busy_cores_in_transfer']} cores in transfer)"
    )
    return result


def warm_up(
    proc: SampledProcess,
    target: OffsetWatcher,
    remote: str,
    config: Path,
    env: dict[str, str],
    topic: str,
    clusters,
    work: Path,
    args: argparse.Namespace,
) -> None:
    """Let the driver copy the `--warm-up-records` already in `topic`, pause its flow,
    load the measured records behind them and resume the flow."""
    say(f"  warming up on {args.warm_up_records:,} records")
    wait_for(
        lambda: sum(target.end_offsets(remote).values()) >= args.warm_up_records,
        timeout=args.timeout,
        what=f"the warm-up's records on {TARGET} (see {proc.log_path})",
        check=proc.check,
    )
    flow_command("pause", config, env, work)
    say(f"  warmed up after {time.monotonic() - proc.started:.1f}s; loading {args.records:,}")
    load(clusters, [topic], args.records, args)
    flow_command("resume", config, env, work)


def load(clusters, topics: list[str], records: int, args: argparse.Namespace) -> None:
    """`records` records of `--record-size` bytes into each of `topics` on the source."""
    preload(
        clusters[0].bootstrap_servers,
        topics,
        records=records,
        partitions=args.partitions,
        value=random_values(seed=1, size=args.record_size),
    )


def flow_command(verb: str, config: Path, env: dict[str, str], work: Path) -> None:
    """`mirrorline pause` or `resume` of the benchmark's flow; it waits for the driver."""
    command = [sys.executable, "-m", "mirrorline", verb, "--config", str(config)]
    command += ["--source", SOURCE, "--target", TARGET]
    done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchmarkError(f"mirrorline {verb}: {(done.stderr or done.stdout).strip()}")


def executors_cpu_now(samplers: list[TreeSampler]) -> dict[str, float]:
    """CPU seconds so far of every thread in the workers' trees, summed by thread kind."""
    total: dict[str, float] = {}
    for sampler in samplers:
        sampler.sample()
        for kind, seconds in sampler.thread_cpu_seconds().items():
            total[kind] = total.get(kind, 0.0) + seconds
    return total


def passes(layouts: list[tuple[int, int]], repeats: int) -> list[tuple[int, tuple[int, int]]]:
    """The layouts in turn, `repeats` times, every other pass in reverse: no layout is
    always the first after the clusters start, or the last of a long run."""
    return [
        (repeat, layout)
        for repeat in range(repeats)
        for layout in (layouts if repeat % 2 == 0 else layouts[::-1])
    ]


def measure_fresh(
    repeat: int, layout: tuple[int, int], clusters, work: Path, args: argparse.Namespace
) -> dict:
    """One layout on a topic of its own, loaded right before it and deleted after it
    (with its copy on the target): every layout starts from the same brokers' state,
    and long runs do not fill the disk."""
    topic = f"scale-{layout_name(layout)}-{repeat}"
    source = clusters[0].bootstrap_servers
    create_topic(source, topic, args.partitions)
    # With a warm-up, the measured records come after it (`warm_up`).
    first_load = args.warm_up_records or args.records
    say(f"pre-loading {first_load:,} records into {topic}")
    load(clusters, [topic], first_load, args)
    try:
        return {"pass": repeat + 1, **measure(layout, topic, clusters, work, args)}
    finally:
        delete_topics(source, [topic])
        delete_topics(clusters[1].bootstrap_servers, [remote_topic(topic)])


def print_table(results: list[dict], base_layout: tuple[int, int]) -> None:
    """The results as a Markdown table, each against the first layout of its own pass."""
    bases = {r["pass"]: r for r in results if r["layout"] == layout_name(base_layout)}
    print(
        "| pass | layout | executor cores | records/s | vs first | second half records/s "
        "| vs first | transfer s | startup s | CPU s driver | CPU s workers "
        "| of it in transfer | machine busy in transfer (cores) | other load (cores) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        base = bases[r["pass"]]
        half = r["records_per_s_second_half"]
        print(
            f"| {r['pass']} | {r['layout']} | {r['executor_cores']} | "
            f"{r['records_per_s']:,.0f} | {r['records_per_s'] / base['records_per_s']:.2f}x | "
            f"{half:,.0f} | {half / base['records_per_s_second_half']:.2f}x | "
            f"{r['transfer_s']} | {r['startup_s']} | "
            f"{r['cpu_s_driver']} | {r['cpu_s_workers_and_executors']} | "
            f"{r['cpu_s_executors_in_transfer']} | "
            f"{r['machine_busy_cores_in_transfer']} | {r['other_cpu_cores']} |"
        )


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    command = recorded_command("standalone_scaling.py", argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorline-scaling-"))
    say(f"work directory: {work}")
    failed = True
    results = []
    try:
        with clusters_running(work / "clusters") as clusters:
            for repeat, layout in passes(args.layouts, args.repeats):
                results.append(measure_fresh(repeat, layout, clusters, work, args))
        failed = False
    except (BenchmarkError, CpuCapError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if failed or args.keep_work_dir:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    conditions = f", {args.data_path_mode}"
    conditions += f", each worker capped at {args.cpu_cap} cores" if args.cpu_cap else ""
    if args.micro_batch_ms is not None:
        conditions += f", micro-batch.duration.ms {args.micro_batch_ms}"
    if args.warm_up_records:
        conditions += f", after a warm-up of {args.warm_up_records:,} records"
    records = f"{args.records:,} records of {args.record_size} B"
    print(f"\n{records}, {args.partitions} partitions{conditions}")
    print_table(results, args.layouts[0])
    if not args.no_save:
        now = dt.datetime.now()
        path = BENCH_DIR / "results" / f"standalone-scaling-{now:%Y-%m-%d-%H%M}.json"
        report = {
            "date": now.strftime("%Y-%m-%d %H:%M"),
            "command": command,
            "writer": "Mirrorline's JVM writer (jar set mirrorline-writer)",
            "settings": {
                "records": args.records,
                "record_size": args.record_size,
                "partitions": args.partitions,
                "worker_memory": args.worker_memory,
                "repeats": args.repeats,
                "cpu_cap_cores_per_worker": args.cpu_cap,
                "data_path_mode": args.data_path_mode,
                "micro_batch_ms": args.micro_batch_ms or "Mirrorline's default",
                "warm_up_records": args.warm_up_records,
                "spark_conf": args.spark_conf,
            },
            **environment(),
            "results": results,
        }
        path.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
