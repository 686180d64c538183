"""The failover drill's command line: what it copies, how long it waits, which tools."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from benchlib.replicators import TOOLS


@dataclass(frozen=True)
class Options:
    records: int
    record_size: int
    partitions: int
    groups: int
    interval: float
    settle: float
    give_up: float
    timeout: float
    seed: int
    tools: tuple[str, ...]
    save: bool
    work_dir: Path | None
    keep_work_dir: bool


def parse_options(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(
        description="Fail consumer groups over from east to west with Mirrorline and with "
        "MirrorMaker 2, and count the records each group reads again or skips on west.",
    )
    parser.add_argument(
        "--records", type=int, default=50_000, help="records per source topic (%(default)s)"
    )
    parser.add_argument(
        "--record-size", type=int, default=100, help="value size in bytes (%(default)s)"
    )
    parser.add_argument(
        "--partitions", type=int, default=3, help="partitions per topic (%(default)s)"
    )
    parser.add_argument(
        "--groups", type=int, default=3, help="consumer groups per tool (%(default)s)"
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=5,
        help="emit.checkpoints, sync.group.offsets and refresh.groups interval, seconds "
        "(%(default)s)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=30,
        help="the groups' offsets on west count as synced once unchanged this long, seconds "
        "(%(default)s)",
    )
    parser.add_argument(
        "--give-up",
        type=float,
        default=180,
        help="once everything is replicated and offsets are unchanged this long, go on even "
        "if some partitions have no offset (counted), seconds (%(default)s)",
    )
    parser.add_argument(
        "--timeout", type=float, default=900, help="longest run of one tool, seconds (%(default)s)"
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="chooses how much each group reads (%(default)s)"
    )
    parser.add_argument("--only", choices=TOOLS, help="run one tool only")
    parser.add_argument("--no-save", action="store_true", help="print only; do not write results/")
    parser.add_argument(
        "--work-dir", type=Path, help="clusters and logs (default: a new temporary directory)"
    )
    parser.add_argument(
        "--keep-work-dir", action="store_true", help="keep clusters' data and logs afterwards"
    )
    args = parser.parse_args(argv)
    if args.partitions < 1 or args.groups < 1 or args.record_size < 16:
        parser.error("--partitions and --groups must be at least 1, --record-size at least 16")
    if args.records < 3 * args.partitions:
        parser.error("--records must be at least 3 per partition")
    if args.interval <= 0 or args.settle <= 0 or args.give_up < args.settle:
        parser.error("--interval and --settle must be > 0 and --give-up >= --settle")
    return Options(
        records=args.records,
        record_size=args.record_size,
        partitions=args.partitions,
        groups=args.groups,
        interval=args.interval,
        settle=args.settle,
        give_up=args.give_up,
        timeout=args.timeout,
        seed=args.seed,
        tools=(args.only,) if args.only else TOOLS,
        save=not args.no_save,
        work_dir=args.work_dir,
        keep_work_dir=args.keep_work_dir,
    )
