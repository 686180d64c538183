"""Backlog workloads: a pre-loaded topic replicated from its first record to its last.

Clocks: the contender's start, the first record readable on the target, the last
record readable on the target (every partition's last source record there). The
target is polled every POLL_S; throughput is measured from the first record to
the last, so the contender's start-up is reported on its own.
"""

from __future__ import annotations

import time

from benchlib.common import POLL_S, TARGET, BenchmarkError, say
from benchlib.kafka_data import create_topic, key_bytes, preload
from benchlib.runs import MB, Run, common_numbers, per_gb, stop
from benchlib.target import TopicReader, compare_samples, read_first
from benchlib.workloads import backlog_values

SAMPLE = 3  # records per partition compared field by field, source against target
# A target whose offsets cover the source but whose last records are not the source's
# last ones, unchanged this long, lost or reordered records: the run fails.
STUCK_S = 60.0


def expected_counts(records: int, partitions: int) -> dict[int, int]:
    """Records per partition when record i goes to partition i % partitions."""
    return {
        p: records // partitions + (1 if p < records % partitions else 0) for p in range(partitions)
    }


def source_last_seqs(run: Run, expected: dict[int, int]) -> dict[int, int]:
    """Per partition, the position (seq) of the source's last record: the one whose
    arrival on the target completes the partition."""
    source = TopicReader(run.source.bootstrap_servers, run.topic, len(expected), False)
    try:
        ends = source.end_offsets()
        if ends != expected:
            raise BenchmarkError(f"{run.topic} holds {ends} records per partition, not {expected}")
        return source.last_seqs(ends)
    finally:
        source.close()


def measure_backlog(run: Run) -> dict:
    s, w, label = run.settings, run.workload, run.contender.label
    create_topic(run.source.bootstrap_servers, run.topic, s.partitions)
    began_preload = time.monotonic()
    preload(
        run.source.bootstrap_servers,
        [run.topic],
        records=s.records,
        partitions=s.partitions,
        value=backlog_values(w, s.partitions),
        compression=w.compression,
    )
    say(
        f"{label}: {s.records:,} records of {run.topic} pre-loaded in "
        f"{time.monotonic() - began_preload:.1f}s; replicating"
    )
    expected = expected_counts(s.records, s.partitions)
    last_seqs = source_last_seqs(run, expected)
    payload = s.records * w.value_size + key_bytes(s.records)
    target = TopicReader(
        run.target.bootstrap_servers, run.remote, s.partitions, run.contender.exactly_once
    )
    run.load.wait_quiet(s.quiet_timeout)
    proc = run.start()
    began = run.load.mark()
    first = cpu_at_first = None
    threads_at_first: dict[str, float] = {}
    last_report = proc.started
    stuck: tuple[dict, float] | None = None  # (ends, since when) of a covered, wrong tail
    try:
        while True:
            now = time.monotonic()
            ends = target.end_offsets()
            total = sum(ends.values())
            if first is None and total > 0:
                first, cpu_at_first = now, proc.sampler.cpu_seconds_now()
                threads_at_first = proc.sampler.thread_cpu_seconds()
                say(f"  first records on {TARGET} after {first - proc.started:.1f}s")
            if ends and all(ends.get(p, 0) >= n for p, n in expected.items()):
                seqs = target.last_seqs(ends)
                if seqs == last_seqs:
                    done, cpu_total = now, proc.sampler.cpu_seconds_now()
                    threads_done = proc.sampler.thread_cpu_seconds()
                    break
                stuck = stuck if stuck and stuck[0] == ends else (ends, now)
                if now - stuck[1] > STUCK_S:
                    raise BenchmarkError(
                        f"{label}: {run.remote} on {TARGET} has offsets {ends} for "
                        f"{STUCK_S:.0f}s, but its partitions end with records {seqs} of the "
                        f"source partitions instead of {last_seqs}: records lost or out of "
                        f"order; see {proc.log_path}"
                    )
            proc.check()
            if now - proc.started > s.timeout:
                raise BenchmarkError(
                    f"{label} replicated {total:,} of {s.records:,} records in "
                    f"{s.timeout:.0f}s; see {proc.log_path}"
                )
            if now - last_report >= 10:
                last_report = now
                say(f"  {total:,} / {s.records:,} offsets on {TARGET}")
            time.sleep(POLL_S)
        other_cores = run.load.cores_since(began)
        disturbed = run.load.disturbance_since(began)
    finally:
        stopped = stop(run, proc)
        target.close()
    compare_samples(
        read_first(run.source.bootstrap_servers, run.topic, s.partitions, SAMPLE),
        target.first_records(SAMPLE),
        f"{label} on {w.name}",
    )
    transfer = max(done - first, POLL_S)  # no finer than the polling
    total_s = done - proc.started
    result = {
        "throughput_rps": round(s.records / transfer, 1),
        "mb_s": round(payload / MB / transfer, 2),
        "cpu_s_per_gb": per_gb(cpu_total - cpu_at_first, payload),
        "peak_rss_mib": round(proc.sampler.peak_rss_kib / 1024, 1),
        "age_p50_ms": None,
        "age_p99_ms": None,
        "age_max_ms": None,
        "startup_s": round(first - proc.started, 2),
        "records": s.records,
        "payload_bytes": payload,
        "transfer_s": round(transfer, 2),
        "total_s": round(total_s, 2),
        "throughput_rps_with_startup": round(s.records / total_s, 1),
        "cpu_s_transfer": round(cpu_total - cpu_at_first, 1),
        "cpu_s_transfer_by_thread": {
            kind: round(seconds - threads_at_first.get(kind, 0.0), 1)
            for kind, seconds in sorted(threads_done.items())
        },
        "cpu_s_total": round(cpu_total, 1),
        "cpu_s_per_gb_with_startup": per_gb(cpu_total, payload),
        **common_numbers(proc, stopped, other_cores, disturbed),
        "client_settings": run.client_settings(),
    }
    say(
        f"  done: {result['throughput_rps']:,.0f} records/s, {result['mb_s']} MB/s, "
        f"{result['cpu_s_per_gb']} CPU s/GB (startup {result['startup_s']}s, transfer "
        f"{result['transfer_s']}s), peak RSS {result['peak_rss_mib']:,.0f} MiB"
    )
    by_thread = result["cpu_s_transfer_by_thread"]
    say("  CPU s of the transfer by thread: " + ", ".join(f"{k} {v}" for k, v in by_thread.items()))
    return result
