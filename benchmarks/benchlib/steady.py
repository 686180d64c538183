"""Steady workloads: record age at the target under a constant produce rate.

A separate producer process writes PROBE_RATE records/s into an empty topic until
the first record reaches the target (that is the start-up), then the workload's
rate for the warm-up and the measured window. Each record's timestamp is its
produce time and every contender keeps it, so a consumer on the target computes
each record's age as arrival - timestamp, for the records produced in the window,
and the same figures for each AGE_WINDOW_S of it (a tail that only some windows
have shows there, not in the whole window's p99).
The consumer reads as the contender's guarantee is read: `read_committed` for
exactly-once. The run ends once every produced record arrived (a lost record
fails it). Alongside, a consumer group commits as it would keep up with the stream
and the age of its checkpoints on the target is sampled (`checkpoint_probe`).
"""

from __future__ import annotations

import math
import multiprocessing
import queue
import time

from confluent_kafka import Consumer, TopicPartition

from benchlib import checkpoint_probe
from benchlib.common import POLL_S, SOURCE, TARGET, BenchmarkError, percentile, say, wait_for
from benchlib.kafka_data import create_topic, paced_producer
from benchlib.runs import MB, Run, common_numbers, per_gb, stop
from benchlib.target import TopicReader

# The record-age figures are also given per window of this length (the last may be shorter).
AGE_WINDOW_S = 60


def _now_ms() -> int:
    return int(time.time() * 1000)


def age_windows(by_window: dict[int, list[int]]) -> list[dict]:
    """Record age per AGE_WINDOW_S (`by_window`: window index -> ages): p50, p99, max."""
    windows = []
    for index in sorted(by_window):
        values = sorted(by_window[index])
        windows.append(
            {
                "from_s": index * AGE_WINDOW_S,
                "records": len(values),
                "age_p50_ms": percentile(values, 50),
                "age_p99_ms": percentile(values, 99),
                "age_max_ms": values[-1],
            }
        )
    return windows


def _reported(results, child, what: str, timeout: float) -> dict:
    """What the child process put on `results`; BenchmarkError if nothing came in time."""
    try:
        return results.get(timeout=timeout)
    except queue.Empty:
        raise BenchmarkError(
            f"{what} (pid {child.pid}) reported nothing within {timeout:g}s"
        ) from None


def measure_steady(run: Run) -> dict:
    s, w, label = run.settings, run.workload, run.contender.label
    create_topic(run.source.bootstrap_servers, run.topic, s.partitions)
    say(
        f"{label}: {w.rate:,} records/s into {run.topic} for {s.warmup_seconds:g}s warm-up "
        f"+ {s.latency_seconds:g}s measured"
    )
    spawn = multiprocessing.get_context("spawn")
    go, halt, results = spawn.Event(), spawn.Event(), spawn.Queue()
    producer = spawn.Process(
        target=paced_producer,
        args=(run.source.bootstrap_servers, run.topic, s.partitions, w.value_size, w.rate)
        + (go, halt, results),
        daemon=True,
    )
    checkpoint_halt, checkpoints = spawn.Event(), spawn.Queue()
    prober = spawn.Process(
        target=checkpoint_probe.probe,
        args=(
            run.source.bootstrap_servers,
            run.target.bootstrap_servers,
            run.topic,
            run.remote,
            f"{SOURCE}.checkpoints.internal",
            s.partitions,
            checkpoint_halt,
            checkpoints,
        ),
        daemon=True,
    )
    watch = TopicReader(run.target.bootstrap_servers, run.remote, s.partitions, False)
    consumer = Consumer(
        {
            "bootstrap.servers": run.target.bootstrap_servers,
            "group.id": "mirrorline-bench-latency",
            "enable.auto.commit": False,
            "isolation.level": (
                "read_committed" if run.contender.exactly_once else "read_uncommitted"
            ),
            "enable.partition.eof": False,
        }
    )
    run.load.wait_quiet(s.quiet_timeout)
    proc = run.start()
    began = run.load.mark()
    producer.start()
    # The measured records' ages by AGE_WINDOW_S of their produce time.
    ages_by_window: dict[int, list[int]] = {}
    consumed = in_window = bytes_in_window = 0
    window_start = window_end = math.inf

    def read(timeout: float) -> None:
        """Wait up to `timeout` for a record, then take what else already arrived. A
        batch read with a timeout would wait for a full batch: ages too high."""
        nonlocal consumed, in_window, bytes_in_window
        first = consumer.poll(timeout)
        if first is None:
            return
        arrival = _now_ms()
        for msg in [first, *consumer.consume(num_messages=1000, timeout=0)]:
            if msg.error():
                raise BenchmarkError(f"reading {run.remote}: {msg.error().str()}")
            consumed += 1
            produced_at = msg.timestamp()[1]
            if window_start <= produced_at < window_end:
                index = int(produced_at - window_start) // (AGE_WINDOW_S * 1000)
                ages_by_window.setdefault(index, []).append(arrival - produced_at)
            if window_start <= arrival < window_end:
                in_window += 1
                bytes_in_window += len(msg.value() or b"") + len(msg.key() or b"")

    try:
        wait_for(
            watch.ready,
            timeout=s.timeout,
            what=f"{label} to create {run.remote} on {TARGET}",
            check=proc.check,
            interval=0.5,
        )
        consumer.assign([TopicPartition(run.remote, p, 0) for p in range(s.partitions)])
        wait_for(
            lambda: read(POLL_S) or consumed > 0,
            timeout=s.timeout,
            what=f"the first record replicated by {label}",
            check=proc.check,
            interval=0,
        )
        startup = time.monotonic() - proc.started
        go.set()
        prober.start()
        window_start = _now_ms() + int(s.warmup_seconds * 1000)
        window_end = window_start + int(s.latency_seconds * 1000)
        say(f"  replicating after {startup:.1f}s; steady load started")
        cpu_at_start = None
        while _now_ms() < window_end:
            read(POLL_S)
            if cpu_at_start is None and _now_ms() >= window_start:
                cpu_at_start = proc.sampler.cpu_seconds_now()
            proc.check()
        cpu_at_end = proc.sampler.cpu_seconds_now()
        halt.set()
        produced = _reported(results, producer, "the load producer", 120)
        if produced["unacknowledged"] or produced["errors"]:
            raise BenchmarkError(f"the load producer failed: {produced}")
        wait_for(
            lambda: read(POLL_S) or consumed >= produced["produced"],
            timeout=max(120, s.timeout / 4),
            what=f"all {produced['produced']:,} records on {TARGET} "
            f"({label}: read {consumed:,} so far)",
            check=proc.check,
            interval=0,
        )
        other_cores = run.load.cores_since(began)
        checkpoint_halt.set()
        observed = _reported(checkpoints, prober, "the checkpoint probe", 60)
    finally:
        halt.set()
        checkpoint_halt.set()
        if prober.pid is not None:
            prober.join(30)
            if prober.is_alive():
                prober.kill()
        stopped = stop(run, proc)
        producer.join(30)
        if producer.is_alive():
            producer.kill()
        consumer.close()
        watch.close()
    if not ages_by_window:
        raise BenchmarkError(f"no record of the measured window reached {run.remote}")
    windows = age_windows(ages_by_window)
    ages = sorted(age for window in ages_by_window.values() for age in window)
    cpu = cpu_at_end - (cpu_at_start if cpu_at_start is not None else cpu_at_end)
    result = {
        "throughput_rps": round(in_window / s.latency_seconds, 1),
        "mb_s": round(bytes_in_window / MB / s.latency_seconds, 2),
        "cpu_s_per_gb": per_gb(cpu, bytes_in_window),
        "peak_rss_mib": round(proc.sampler.peak_rss_kib / 1024, 1),
        "age_p50_ms": percentile(ages, 50),
        "age_p99_ms": percentile(ages, 99),
        "age_max_ms": ages[-1],
        "startup_s": round(startup, 2),
        "rate": w.rate,
        "warmup_s": s.warmup_seconds,
        "measured_s": s.latency_seconds,
        "produced": produced["produced"],
        "consumed": consumed,
        "measured_records": len(ages),
        "age_p90_ms": percentile(ages, 90),
        "age_mean_ms": round(sum(ages) / len(ages), 1),
        "age_windows": windows,
        "checkpoint_age": checkpoint_probe.checkpoint_age(observed, window_start, window_end),
        "cpu_cores": round(cpu / s.latency_seconds, 2),
        **common_numbers(proc, stopped, other_cores),
        "client_settings": run.client_settings(),
    }
    say(
        f"  record age p50 {result['age_p50_ms']} ms, p99 {result['age_p99_ms']} ms, "
        f"max {result['age_max_ms']} ms over {len(ages):,} records; "
        f"{result['cpu_cores']} cores busy; p99 per {AGE_WINDOW_S}-s window: "
        f"{', '.join(str(w['age_p99_ms']) for w in windows)} ms"
    )
    ca = result["checkpoint_age"]
    say(
        f"  checkpoint age p50 {ca['age_p50_ms']} ms, p99 {ca['age_p99_ms']} ms, "
        f"max {ca['age_max_ms']} ms ({ca['without_checkpoint']:,} of {ca['samples']:,} samples "
        f"before any checkpoint; {ca['checkpoints']:,} checkpoints)"
    )
    return result
