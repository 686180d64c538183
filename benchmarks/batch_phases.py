#!/usr/bin/env python3
"""Where Mirrorline's micro-batches spend their time, from a driver's log.

Spark reports each micro-batch's phases in its progress (`durationMs`), which the
driver logs when it runs at `--log-level debug`: `latestOffset` (the driver asks
the source for its latest offsets), `queryPlanning` and `getBatch` (planning, on
the driver), `walCommit`/`commitOffsets` (Spark's logs, written in the background
by Mirrorline), `addBatch` (the batch's tasks: their launch, their fetches from
the source and their writes, and the hand-over to the bookkeeping) and
`triggerExecution` (the whole cycle). The writer's tasks are timed by Spark's
scheduler ("Finished task ... in N ms"). This script prints the median and p90 of
each over the log's last batches, and of each batch's slowest task.

Benchmarks give their drivers that level with MIRRORLINE_BENCH_LOG_LEVEL=debug;
the log is then `<work dir>/<round trip>/logs/<workload>-<contender>.log`:

    MIRRORLINE_BENCH_LOG_LEVEL=debug .venv/bin/python benchmarks/wan_throughput.py \\
        --latencies 100 --workloads steady_5k --contenders mirrorline_alo --work-dir /tmp/wan
    .venv/bin/python benchmarks/batch_phases.py /tmp/wan/100ms/logs/steady_5k-mirrorline_alo.log
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

PHASES = (
    "latestOffset",
    "getBatch",
    "queryPlanning",
    "walCommit",
    "addBatch",
    "commitOffsets",
    "triggerExecution",
)
_PROGRESS = re.compile(r"made progress: (\{.*?\n\})", re.S)
_TASK = re.compile(r"\[batchId = (\d+)\] Finished task .* in (\d+) ms")


def progress(text: str) -> list[dict]:
    """Every batch progress Spark logged in `text`, in order."""
    out = []
    for match in _PROGRESS.finditer(text):
        try:
            out.append(json.loads(match.group(1)))
        except json.JSONDecodeError:
            continue  # cut by another thread's line: skip it
    return out


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(text: str, last: int) -> dict[str, dict[str, float]]:
    """Median and p90 (ms) of each phase over the last `last` batches, and of their
    slowest tasks; "batches" holds how many batches that was."""
    batches = progress(text)[-last:]
    if not batches:
        raise SystemExit("no batch progress in the log: was the driver at --log-level debug?")
    out = {}
    for phase in PHASES:
        values = [float(b["durationMs"].get(phase, 0)) for b in batches]
        out[phase] = {"p50": quantile(values, 0.5), "p90": quantile(values, 0.9)}
    slowest: dict[int, float] = {}  # batch id -> its slowest task, which ends the batch
    for batch_id, ms in _TASK.findall(text):
        slowest[int(batch_id)] = max(slowest.get(int(batch_id), 0.0), float(ms))
    tasks = [slowest[b["batchId"]] for b in batches if b["batchId"] in slowest]
    if tasks:
        out["slowest task"] = {"p50": quantile(tasks, 0.5), "p90": quantile(tasks, 0.9)}
    out["batches"] = {"count": float(len(batches))}
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="a Mirrorline driver's log, at --log-level debug")
    parser.add_argument("--last", type=int, default=20, help="batches to summarise (20)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    try:
        text = args.log.read_text(errors="replace")
    except OSError as exc:
        parser.error(f"cannot read {args.log}: {exc.strerror}")
    result = summary(text, args.last)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    count = int(result["batches"]["count"])
    print(f"{'phase':<18} {'p50 ms':>8} {'p90 ms':>8}   over {count} batches")
    for name, values in result.items():
        if name != "batches":
            print(f"{name:<18} {values['p50']:>8.0f} {values['p90']:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
