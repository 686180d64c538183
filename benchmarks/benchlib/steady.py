"""Steady workloads: record age at the target under a constant produce rate.

A separate producer process writes PROBE_RATE records/s into an empty topic until
the first record reaches the target (that is the start-up), then the workload's
rate in the contender's turns (`turns.py`: its warm-up, then its measured windows;
back to back for a contender alone, in turn with the others when interleaved).
Each record's timestamp is its produce time and every contender keeps it, so a
consumer on the target computes each record's age as arrival - timestamp, for the
records produced in the measured windows, over all of them and for each window (a
tail that only some windows have shows there, not in the whole run's p99).
The consumer reads as the contender's guarantee is read: `read_committed` for
exactly-once. The run ends once every produced record arrived (a lost record
fails it). Alongside, a consumer group commits as it would keep up with the stream
and the age of its checkpoints on the target is sampled (`checkpoint_probe`).
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time

from confluent_kafka import Consumer, TopicPartition

from benchlib import checkpoint_probe
from benchlib.common import POLL_S, SOURCE, TARGET, BenchmarkError, percentile, say, wait_for
from benchlib.kafka_data import create_topic, paced_producer
from benchlib.runs import MB, Run, common_numbers, per_gb, stop
from benchlib.target import TopicReader
from benchlib.turns import AGE_WINDOW_S, BrokenOff, Slot, Turns, flat, now_ms, window_of


def age_windows(
    by_window: dict[int, list[int]], windows: list[Slot], disturbed: dict | None
) -> list[dict]:
    """Record age per measured window (`by_window`: window index -> ages): p50, p99, max,
    and how long the machine stood still in the window, where it did (`disturbed`)."""
    out = []
    for index in sorted(by_window):
        values = sorted(by_window[index])
        window = {
            "from_s": index * AGE_WINDOW_S,
            "at_ms": windows[index].start_ms,
            "records": len(values),
            "age_p50_ms": percentile(values, 50),
            "age_p99_ms": percentile(values, 99),
            "age_max_ms": values[-1],
        }
        stalled = stalled_s(windows[index], disturbed)
        if stalled:
            window["stalled_s"] = stalled
        out.append(window)
    return out


def stalled_s(window: Slot, disturbed: dict | None) -> float:
    """Seconds of the machine's stalls that fall inside `window`."""
    overlap = 0.0
    for stall in (disturbed or {}).get("stalls", ()):
        began_ms = stall["began"] * 1000
        ended_ms = began_ms + stall["seconds"] * 1000
        overlap += max(0.0, min(ended_ms, window.end_ms) - max(began_ms, window.start_ms))
    return round(overlap / 1000, 1)


def _between_turns(result: dict) -> str:
    idle = result["cpu_cores_between_turns"]
    return "" if idle is None else f" ({idle} in the others' turns)"


def _reported(results, child, what: str, timeout: float) -> dict:
    """What the child process put on `results`; BenchmarkError if nothing came in time."""
    try:
        return results.get(timeout=timeout)
    except queue.Empty:
        raise BenchmarkError(
            f"{what} (pid {child.pid}) reported nothing within {timeout:g}s"
        ) from None


def measure_interleaved(runs: list[Run]) -> list[dict]:
    """Every run's `measure_steady` at the same time, taking turns with the load
    (`turns.py`); the results in `runs`' order."""
    s = runs[0].settings
    turns = Turns(len(runs), s.warmup_seconds, s.latency_seconds, s.timeout)
    results: list[dict] = [{} for _ in runs]
    errors: list[Exception] = []

    def measure(index: int) -> None:
        try:
            results[index] = measure_steady(runs[index], turns, index)
        except Exception as exc:  # noqa: BLE001 - raised by the caller below
            errors.append(exc)
            turns.break_off()

    threads = [threading.Thread(target=measure, args=(i,)) for i in range(len(runs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        # The first failure is the cause; the others only stopped waiting for it.
        raise next((e for e in errors if not isinstance(e, BrokenOff)), errors[0])
    return results


def measure_steady(run: Run, turns: Turns | None = None, index: int = 0) -> dict:
    """One contender's steady run: alone, or as run `index` of interleaved `turns`."""
    s, w, label = run.settings, run.workload, run.contender.label
    turns = turns or Turns(1, s.warmup_seconds, s.latency_seconds, s.timeout)
    create_topic(run.source.bootstrap_servers, run.topic, s.partitions)
    say(
        f"{label}: {w.rate:,} records/s into {run.topic} for {s.warmup_seconds:g}s warm-up "
        f"+ {s.latency_seconds:g}s measured"
    )
    spawn = multiprocessing.get_context("spawn")
    go, halt, results = spawn.Event(), spawn.Event(), spawn.Queue()
    # Its turns with the load, as epoch seconds: set once every run copies (Turns).
    schedule = spawn.Array("d", 2 * (1 + turns.window_count))
    producer = spawn.Process(
        target=paced_producer,
        args=(run.source.bootstrap_servers, run.topic, s.partitions, w.value_size, w.rate)
        + (go, halt, results, schedule),
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
    turns.meet("its start")
    proc = run.start()
    began = run.load.mark()
    producer.start()
    # The measured records' ages by the window of their produce time.
    ages_by_window: dict[int, list[int]] = {}
    consumed = in_window = bytes_in_window = 0
    windows: list[Slot] = []  # set once the load starts

    def read(timeout: float) -> None:
        """Wait up to `timeout` for a record, then take what else already arrived. A
        batch read with a timeout would wait for a full batch: ages too high."""
        nonlocal consumed, in_window, bytes_in_window
        first = consumer.poll(timeout)
        if first is None:
            return
        arrival = now_ms()
        for msg in [first, *consumer.consume(num_messages=1000, timeout=0)]:
            if msg.error():
                raise BenchmarkError(f"reading {run.remote}: {msg.error().str()}")
            consumed += 1
            produced_at = msg.timestamp()[1]
            window = window_of(windows, produced_at)
            if window is not None:
                ages_by_window.setdefault(window, []).append(arrival - produced_at)
            if window_of(windows, arrival) is not None:
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
        say(f"  {label}: replicating after {startup:.1f}s")
        turns.start_load()
        schedule[:] = flat(turns.turns(index))
        windows = turns.windows(index)
        go.set()
        prober.start()
        say(f"  {label}: steady load started")

        def read_until(ms: int) -> None:
            while now_ms() < ms:
                read(POLL_S)
                proc.check()

        # The contender's CPU seconds in its own measured windows and in the others'.
        cpu = cpu_between_turns = 0.0
        for owner, window in turns.measured():
            read_until(window.start_ms)
            at_start = proc.sampler.cpu_seconds_now()
            read_until(window.end_ms)
            spent = proc.sampler.cpu_seconds_now() - at_start
            if owner == index:
                cpu += spent
            else:
                cpu_between_turns += spent
        turns.meet("the end of every turn")
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
        disturbed = run.load.disturbance_since(began)
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
    by_window = age_windows(ages_by_window, windows, disturbed)
    ages = sorted(age for window in ages_by_window.values() for age in window)
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
        "age_windows": by_window,
        "checkpoint_age": checkpoint_probe.checkpoint_age(observed, windows),
        "cpu_cores": round(cpu / s.latency_seconds, 2),
        # Interleaved: its cores while the others had their turns (idle, at PROBE_RATE).
        "cpu_cores_between_turns": (
            round(cpu_between_turns / (s.latency_seconds * (turns.runs - 1)), 2)
            if turns.runs > 1
            else None
        ),
        **common_numbers(proc, stopped, other_cores, disturbed),
        "client_settings": run.client_settings(),
    }
    say(
        f"  {label}: record age p50 {result['age_p50_ms']} ms, p99 {result['age_p99_ms']} ms, "
        f"max {result['age_max_ms']} ms over {len(ages):,} records; "
        f"{result['cpu_cores']} cores busy{_between_turns(result)}; p99 per "
        f"{AGE_WINDOW_S}-s window: "
        f"{', '.join(str(w['age_p99_ms']) for w in by_window)} ms"
    )
    ca = result["checkpoint_age"]
    say(
        f"  {label}: checkpoint age p50 {ca['age_p50_ms']} ms, p99 {ca['age_p99_ms']} ms, "
        f"max {ca['age_max_ms']} ms ({ca['without_checkpoint']:,} of {ca['samples']:,} samples "
        f"before any checkpoint; {ca['checkpoints']:,} checkpoints)"
    )
    return result
