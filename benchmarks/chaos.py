#!/usr/bin/env python3
"""Chaos soak: SIGKILL Mirrorline's driver again and again while it replicates; count the damage.

The harness of `tests/integration/test_crash_safety.py` (`tests/support/crash_harness.py`)
at a larger scale: by default 2,000,000 numbered records stream into a 4-partition
topic on a local `east` cluster while `mirrorline driver` replicates them to `west`
and is killed 20 times (with its Spark JVM and Python workers) at random moments,
then started again. Afterwards every partition of the replica is audited against
the source: nothing may be lost, every record must keep its key, value, headers
and timestamp and its order; at-least-once may write re-read runs of at most two
micro-batches per kill (the driver saves one while it writes the next),
exactly-once nothing twice.

Prints progress while it runs, then a summary (records, kills, duplicates, lost,
time) that is also saved to `results/chaos-<date>-<time>.json` unless `--no-save`.
Exit code 0 when every mode kept its guarantees, 1 otherwise.

Run `python benchmarks/chaos.py --help`; see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shlex
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
# Soak the Mirrorline of this checkout, with the test suite's harness.
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from benchlib.common import SOURCE, TARGET, say  # noqa: E402
from benchlib.environment import environment  # noqa: E402

from mirrorline.devcluster import DevClusters  # noqa: E402
from support.crash_harness import MODES, CrashReport, Scenario, run_crash_scenario  # noqa: E402


def parse_options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Kill Mirrorline's driver at random moments while it replicates a stream, "
        "then check that the target lost nothing (and, in exactly-once mode, doubled nothing).",
    )
    parser.add_argument(
        "--mode",
        choices=("at-least-once", "exactly-once", "both"),
        default="both",
        help="delivery guarantee to soak (%(default)s)",
    )
    parser.add_argument(
        "--records", type=int, default=2_000_000, help="records to stream (%(default)s)"
    )
    parser.add_argument("--kills", type=int, default=20, help="driver kills per mode (%(default)s)")
    parser.add_argument(
        "--partitions", type=int, default=4, help="partitions of the source topic (%(default)s)"
    )
    parser.add_argument(
        "--rate", type=int, default=5_000, help="records/s while streaming (%(default)s)"
    )
    parser.add_argument(
        "--max-poll-records",
        type=int,
        default=5_000,
        help="max.poll.records of the flow: records per partition and micro-batch, which "
        "bounds the re-reads of one kill in at-least-once mode (%(default)s)",
    )
    parser.add_argument(
        "--max-kill-delay",
        type=float,
        default=5.0,
        help="longest random wait, once a started driver writes, before killing it; "
        "seconds (%(default)s)",
    )
    parser.add_argument("--seed", type=int, help="replay the random choices of an earlier run")
    parser.add_argument(
        "--no-save", action="store_true", help="print only; do not write results/chaos-*.json"
    )
    parser.add_argument(
        "--work-dir", type=Path, help="clusters and driver logs (default: a new temporary one)"
    )
    parser.add_argument(
        "--keep-work-dir", action="store_true", help="keep clusters' data and logs afterwards"
    )
    args = parser.parse_args(argv)
    for name in ("records", "partitions", "rate", "max_poll_records"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.kills < 0 or args.max_kill_delay < 0:
        parser.error("--kills and --max-kill-delay must not be negative")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2**31)
    return args


def summary_table(reports: list[CrashReport]) -> str:
    lines = [
        "| mode | records | kills | duplicates | most per kill (bound) | lost | time | result |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        most = max(r.duplicates_per_kill, default=0)
        result = "kept" if not r.violations() else "BROKEN"
        lines.append(
            f"| {r.mode} | {r.records:,} | {len(r.kills)} | {r.duplicates:,} | "
            f"{most:,} ({r.replay_bound:,}) | {r.lost:,} | {r.seconds:,.0f} s | {result} |"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> list[CrashReport]:
    modes = list(MODES.values()) if args.mode == "both" else [MODES[args.mode]]
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="mirrorline-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    say(f"work directory (clusters, driver logs): {work}; seed {args.seed}")
    clusters = DevClusters(work / "clusters")
    reports: list[CrashReport] = []
    done = False
    try:
        started = clusters.up([SOURCE, TARGET], die_with_parent=True, progress=say)
        source, target = sorted(started, key=lambda c: c.alias != SOURCE)
        for mode in modes:
            scenario = Scenario(
                records=args.records,
                partitions=args.partitions,
                kills=args.kills,
                rate=args.rate,
                max_poll_records=args.max_poll_records,
                seed=args.seed,
                max_kill_delay_s=args.max_kill_delay,
                # A soak may share its machine: allow slow starts and a long catch-up.
                start_timeout_s=600.0,
                catch_up_timeout_s=max(600.0, args.records / 1_000),
            )
            reports.append(
                run_crash_scenario(source, target, work / mode.name, mode, scenario, say)
            )
        done = True
    finally:
        clusters.down(progress=say)
        if not done or args.keep_work_dir:
            say(f"kept {work} (driver logs in {work}/<mode>/logs)")
        elif args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return reports


def save(reports: list[CrashReport], args: argparse.Namespace, command: str) -> Path:
    now = dt.datetime.now()
    path = BENCH_DIR / "results" / f"chaos-{now:%Y-%m-%d-%H%M}.json"
    path.parent.mkdir(exist_ok=True)
    report = {
        "date": now.strftime("%Y-%m-%d %H:%M"),
        "command": command,
        "settings": {
            k: getattr(args, k)
            for k in (
                "mode",
                "records",
                "kills",
                "partitions",
                "rate",
                "max_poll_records",
                "max_kill_delay",
                "seed",
            )
        },
        **environment(),
        "results": [{**asdict(r), "violations": r.violations()} for r in reports],
    }
    path.write_text(json.dumps(report, indent=2) + "\n")
    return path


def main(argv: list[str]) -> int:
    args = parse_options(argv)
    command = shlex.join(["python", "benchmarks/chaos.py", *argv])

    def terminate(signum, _frame) -> None:
        raise SystemExit(f"stopped by {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, terminate)
    began = time.monotonic()
    try:
        reports = run(args)
    except AssertionError as exc:  # the harness could not finish a run: a driver that died, ...
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print()
    print(summary_table(reports))
    broken = [(r.mode, v) for r in reports for v in r.violations()]
    for mode, violation in broken:
        print(f"{mode}: {violation}")
    print(f"\nseed {args.seed}; {time.monotonic() - began:,.0f} s in all")
    if not args.no_save:
        path = save(reports, args, command)
        print(f"wrote {path.relative_to(REPO)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
