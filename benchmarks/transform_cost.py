"""What single message transforms cost the writer: records/s with and without them.

One source topic is pre-loaded once; then Mirrorline's driver replicates all of
it, once per contender, each time as a new flow (a fresh source alias for the
same cluster, so every run starts from the beginning and writes a topic of its
own):

- `before`: Mirrorline as it was before transforms existed (`--before SRC`,
  the `src` directory of such a tree, with its writer jar built);
- `none`: this checkout, the flow without transforms;
- `insert_header`: this checkout, `InsertHeader` on every record (with
  `header.converter = SimpleHeaderConverter`, which MM2 needs for a text
  header).

Two rates per run: over the whole copy (first record on the target to the
last), which includes the JVM's warm-up (the first batches of a new driver run
interpreted code, Connect's classes too), and over its second half, the
steady state of a driver that has run for a while; CPU is the driver's
process tree over the second half. The order is repeated reversed
(`--rounds 2`, the default), since a later run on a warm machine tends to be
faster.

Run: `.venv/bin/python benchmarks/transform_cost.py --before /path/to/old/src
[--records N] [--partitions P] [--rounds R] [--no-save]`
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "src"))
sys.path.insert(0, str(BENCH_DIR))

from benchlib.common import REPO, TARGET, say, wait_for  # noqa: E402
from benchlib.environment import environment  # noqa: E402
from benchlib.kafka_data import (  # noqa: E402
    OffsetWatcher,
    clusters_running,
    create_topic,
    preload,
    random_values,
)
from benchlib.procs import SampledProcess  # noqa: E402

TOPIC = "transform-bench"
SMT = "org.apache.kafka.connect.transforms."
INSERT_HEADER = (
    "header.converter = org.apache.kafka.connect.storage.SimpleHeaderConverter\n"
    "transforms = tag\n"
    f"transforms.tag.type = {SMT}InsertHeader\n"
    "transforms.tag.header = replicated.by\n"
    "transforms.tag.value.literal = mirrorline\n"
)
CONTENDERS = ("before", "none", "insert_header")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="src/ of the old tree")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--size", type=int, default=100, help="value bytes")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-save", action="store_true", help="print only")
    opts = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorline-smt-bench-"))
    runs: list[dict] = []
    with clusters_running(work / "clusters") as (east, west):
        create_topic(east.bootstrap_servers, TOPIC, opts.partitions)
        say(f"pre-loading {opts.records:,} records of {opts.size} bytes")
        preload(
            east.bootstrap_servers,
            [TOPIC],
            records=opts.records,
            partitions=opts.partitions,
            value=random_values(7, opts.size),
        )
        watcher = OffsetWatcher(west.bootstrap_servers)
        order = [c for r in range(opts.rounds) for c in (CONTENDERS[::-1] if r % 2 else CONTENDERS)]
        for n, contender in enumerate(order):
            alias = f"src{n}"
            config = work / f"{alias}.properties"
            config.write_text(_config(alias, east, west, contender, opts.partitions))
            tree = opts.before if contender == "before" else REPO / "src"
            run = _replicate(contender, tree, config, work / alias, watcher, opts.records, alias)
            say(json.dumps(run))
            runs.append(run)
        watcher.close()
    _report(runs, opts, argv)
    return 0


def _config(alias: str, east, west, contender: str, partitions: int) -> str:
    return (
        f"clusters = {alias}, {TARGET}\n"
        f"{alias}.bootstrap.servers = {east.bootstrap_servers}\n"
        f"{TARGET}.bootstrap.servers = {west.bootstrap_servers}\n"
        f"{alias}->{TARGET}.enabled = true\n"
        f"{alias}->{TARGET}.topics = {TOPIC}\n"
        "replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
        "checkpoints.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
        "emit.heartbeats.enabled = false\n"
        + (INSERT_HEADER if contender == "insert_header" else "")
    )


def _replicate(
    contender: str, tree: Path, config: Path, work: Path, watcher, records: int, alias: str
) -> dict:
    work.mkdir()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env["PYTHONUNBUFFERED"] = "1"
    command = [
        sys.executable, "-m", "mirrorline", "driver", "--config", str(config),
        "--clusters", TARGET, "--work-dir", str(work / "driver"), "--status-every", "5",
    ]  # fmt: skip
    driver = SampledProcess(contender, command, env, work / "driver.log", cwd=work)
    remote = f"{alias}.{TOPIC}"

    def copied() -> int:
        return sum(watcher.end_offsets(remote).values())

    try:
        wait_for(lambda: copied() > 0, timeout=300, what="the first record", check=driver.check)
        first = time.monotonic()
        wait_for(lambda: copied() >= records // 2, timeout=600, what="half", check=driver.check)
        half, cpu_half = time.monotonic(), driver.sampler.cpu_seconds_now()
        wait_for(lambda: copied() >= records, timeout=600, what="every record", check=driver.check)
        done, cpu_done = time.monotonic(), driver.sampler.cpu_seconds_now()
    finally:
        driver.stop()
    return {
        "contender": contender,
        "records_per_s": round(records / (done - first)),
        "seconds": round(done - first, 2),
        "second_half_records_per_s": round((records - records // 2) / (done - half)),
        "second_half_cpu_seconds": round(cpu_done - cpu_half, 2),
    }


def _report(runs: list[dict], opts, argv: list[str]) -> None:
    by = {c: [r for r in runs if r["contender"] == c] for c in CONTENDERS}

    def med(c: str, key: str) -> float:
        return statistics.median(r[key] for r in by[c])

    median = {c: med(c, "records_per_s") for c in CONTENDERS}
    steady = {c: med(c, "second_half_records_per_s") for c in CONTENDERS}
    lines = [
        f"records: {opts.records:,} x {opts.size} B values, {opts.partitions} partitions, "
        f"{opts.rounds} rounds (orders alternate); medians over the rounds",
        "| contender | whole copy, records/s per run | median | vs before "
        "| second half, records/s per run | median | vs before | CPU s, second half |",
        "|---|---|---:|---:|---|---:|---:|---:|",
    ]
    for c in CONTENDERS:
        whole = ", ".join(f"{r['records_per_s']:,}" for r in by[c])
        half = ", ".join(f"{r['second_half_records_per_s']:,}" for r in by[c])
        lines.append(
            f"| {c} | {whole} | {median[c]:,.0f} | {median[c] / median['before']:.2f} "
            f"| {half} | {steady[c]:,.0f} | {steady[c] / steady['before']:.2f} "
            f"| {med(c, 'second_half_cpu_seconds'):.1f} |"
        )
    table = "\n".join(lines)
    print(table)
    print("settings of insert_header:\n" + INSERT_HEADER)
    if opts.no_save:
        return
    stamp = datetime.now(UTC).strftime("%Y-%m-%d-%H%M")
    out = BENCH_DIR / "results" / f"transform-cost-{stamp}.json"
    out.write_text(
        json.dumps(
            {
                "command": " ".join(["benchmarks/transform_cost.py", *argv]),
                "environment": environment(),
                "settings": {"insert_header": INSERT_HEADER},
                "runs": runs,
                "median_records_per_s": median,
                "median_second_half_records_per_s": steady,
                "table": table,
            },
            indent=2,
        )
        + "\n"
    )
    say(f"saved {out}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
