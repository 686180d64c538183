#!/usr/bin/env python3
"""The driver's CPU during transfer at one record rate and at twice it, on a Spark
standalone cluster, and what the driver spends it on.

The driver plans every micro-batch and writes each flow's bookkeeping; the
executors move the records. Scaling out on more executors is only worth
something if the driver's work stays flat in the record rate. For each rate
(`--rates`, default 5,000 and 10,000 records/s of 1 KiB): a fresh topic, a fresh
standalone cluster (one worker of `--cores` cores), `mirrorline driver --master
spark://...` and a paced producer at the rate. After `--warmup-seconds` the CPU
of the driver's Python process, of its Spark JVM (in client mode: the planner)
and of the worker with its executors is taken over `--seconds`, and py-spy
samples the driver's Python over the same window (`--nonblocking`: the driver is
never paused), so the functions with the most samples say where its time goes;
the Spark JVM's CPU over the window is split by thread, a pool's threads summed
under one name (`dispatcher-event-loop-#`).

Results go to `benchmarks/results/driver-cpu-<date>-<time>.json`.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import multiprocessing
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from benchlib.common import SOURCE, BenchmarkError, recorded_command, say  # noqa: E402
from benchlib.environment import environment  # noqa: E402
from benchlib.kafka_data import (  # noqa: E402
    OffsetWatcher,
    clusters_running,
    create_topic,
    paced_producer,
)
from benchlib.procs import SampledProcess, TreeSampler, thread_group  # noqa: E402
from benchlib.replicators import mirrorline_command, write_replication_config  # noqa: E402

from support.spark_standalone import StandaloneCluster  # noqa: E402

DRIVER_ROLES = ("Python driver", "Spark JVM")
TOP_FUNCTIONS = 12
TOP_THREADS = 10


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rates", type=lambda t: [int(x) for x in t.split(",")], default=[5_000, 10_000]
    )
    parser.add_argument("--record-size", type=int, default=1024, help="value bytes")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--cores", type=int, default=2, help="executor cores of the one worker")
    parser.add_argument("--warmup-seconds", type=float, default=60)
    parser.add_argument("--seconds", type=float, default=60, help="measured window")
    parser.add_argument("--no-save", action="store_true", help="print only")
    return parser.parse_args(argv)


def measure(rate: int, clusters, work: Path, args: argparse.Namespace) -> dict:
    topic = f"driver-cpu-{rate}"
    remote = f"{SOURCE}.{topic}"
    source = clusters[0].bootstrap_servers
    create_topic(source, topic, args.partitions)
    say(f"{rate:,} records/s: standalone cluster of 1 worker x {args.cores} cores")
    cluster = StandaloneCluster(work / f"spark-{rate}", workers=1, cores=args.cores)
    spawn = multiprocessing.get_context("spawn")
    go, halt, results = spawn.Event(), spawn.Event(), spawn.Queue()
    go.set()
    producer = spawn.Process(
        target=paced_producer,
        args=(source, topic, args.partitions, args.record_size, rate, go, halt, results),
        daemon=True,
    )
    target = OffsetWatcher(clusters[1].bootstrap_servers)
    with cluster:
        [worker] = [p for d, p in cluster.daemon_pids().items() if d.startswith("worker")]
        executors = TreeSampler(worker).start()
        config = write_replication_config(
            work / f"{rate}.properties", clusters, topic, args.partitions
        )
        command, env = mirrorline_command(config, work / f"driver-{rate}", cluster.master_url)
        proc = SampledProcess("Mirrorline", command, env, work / f"driver-{rate}.log", work)
        producer.start()
        try:
            _wait(lambda: sum(target.end_offsets(remote).values()) > 0, proc, 300, "a first copy")
            say(f"  copying after {time.monotonic() - proc.started:.1f}s; warming up")
            _wait(lambda: False, proc, args.warmup_seconds, None)
            before = _cpu(proc.sampler, executors)
            jvm_before = proc.sampler.thread_cpu_seconds("Spark JVM", thread_group)
            copied_before = sum(target.end_offsets(remote).values())
            began = time.monotonic()
            profile = _profile(proc.popen.pid, args.seconds, work / f"py-spy-{rate}.txt")
            window = time.monotonic() - began
            copied = sum(target.end_offsets(remote).values()) - copied_before
            after = _cpu(proc.sampler, executors)
            jvm_after = proc.sampler.thread_cpu_seconds("Spark JVM", thread_group)
        finally:
            halt.set()
            producer.join(90)
            proc.stop()
            executors.stop()
            target.close()
    per_s = {role: round((after[role] - before[role]) / window, 3) for role in after}
    result = {
        "rate": rate,
        "copied_per_s": round(copied / window, 1),
        "window_s": round(window, 1),
        "cpu_cores": per_s,
        "driver_cpu_cores": round(sum(per_s[r] for r in DRIVER_ROLES), 3),
        "driver_python_top": profile,
        "driver_jvm_threads": _busiest(jvm_before, jvm_after, window),
    }
    say(
        f"  {rate:,}/s: copied {result['copied_per_s']:,.0f}/s; CPU cores: "
        + ", ".join(f"{role} {cores}" for role, cores in per_s.items())
    )
    return result


def _wait(condition, proc: SampledProcess, seconds: float, what: str | None) -> None:
    """Until `condition` holds (an error after `seconds` when `what` names it), or
    for `seconds` when `what` is None; the driver must stay alive throughout."""
    deadline = time.monotonic() + seconds
    while not condition():
        proc.check()
        if time.monotonic() > deadline:
            if what is None:
                return
            raise BenchmarkError(f"no {what} within {seconds:.0f}s; see {proc.log_path}")
        time.sleep(0.5)


def _cpu(driver: TreeSampler, executors: TreeSampler) -> dict[str, float]:
    driver.sample()
    roles = driver.cpu_seconds_by_role()
    found = {role: roles.get(role, 0.0) for role in DRIVER_ROLES}
    found["worker and executors"] = executors.cpu_seconds_now()
    return found


def _busiest(before: dict[str, float], after: dict[str, float], window: float) -> list[dict]:
    """The driver JVM's thread groups that used the most CPU in the window, in cores."""
    used = {name: after[name] - before.get(name, 0.0) for name in after}
    top = sorted(used.items(), key=lambda item: -item[1])[:TOP_THREADS]
    return [{"threads": name, "cores": round(cpu / window, 3)} for name, cpu in top if cpu > 0]


def _profile(pid: int, seconds: float, out: Path) -> list[dict]:
    """py-spy's samples of `pid` over `seconds`: the functions most often on top of a
    stack (own time) and their share of all samples."""
    py_spy = Path(sys.executable).with_name("py-spy")
    if not py_spy.exists():
        raise BenchmarkError(f"{py_spy} is missing: `make bench` installs it")
    subprocess.run(
        [
            str(py_spy),
            "record",
            "--pid",
            str(pid),
            "--duration",
            str(int(seconds)),
            "--rate",
            "50",
            "--nonblocking",
            "--threads",
            "--format",
            "raw",
            "--output",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    own: collections.Counter[str] = collections.Counter()
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            own[stack.split(";")[-1]] += int(count)
    total = sum(own.values()) or 1
    return [
        {"function": name, "share": round(n / total, 3)}
        for name, n in own.most_common(TOP_FUNCTIONS)
    ]


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    command = recorded_command("driver_cpu.py", argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorline-driver-cpu-"))
    say(f"work directory: {work}")
    results = []
    try:
        with clusters_running(work / "clusters") as clusters:
            for rate in args.rates:
                results.append(measure(rate, clusters, work, args))
    except BenchmarkError as exc:
        print(f"error: {exc}\nkept {work}", file=sys.stderr)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    base = results[0]
    print(
        "\n| records/s | copied/s | driver Python | Spark JVM (driver) | worker+executors "
        "| driver cores vs first |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for r in results:
        cores = r["cpu_cores"]
        print(
            f"| {r['rate']:,} | {r['copied_per_s']:,.0f} | {cores['Python driver']} | "
            f"{cores['Spark JVM']} | {cores['worker and executors']} | "
            f"{r['driver_cpu_cores'] / max(base['driver_cpu_cores'], 1e-9):.2f}x |"
        )
    for r in results:
        print(f"\ndriver's Spark JVM at {r['rate']:,}/s, cores by thread:")
        for entry in r["driver_jvm_threads"]:
            print(f"  {entry['cores']:6.3f}  {entry['threads']}")
    for r in results:
        print(f"\ndriver Python at {r['rate']:,}/s, own time by function:")
        for entry in r["driver_python_top"]:
            print(f"  {entry['share']:6.1%}  {entry['function']}")
    if not args.no_save:
        now = dt.datetime.now()
        path = BENCH_DIR / "results" / f"driver-cpu-{now:%Y-%m-%d-%H%M}.json"
        document = {
            "date": now.strftime("%Y-%m-%d %H:%M"),
            "command": command,
            "settings": {k: getattr(args, k) for k in vars(args) if k != "no_save"},
            **environment(),
            "results": results,
        }
        path.write_text(json.dumps(document, indent=2) + "\n")
        print(f"\nwrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
