"""How long the translation store takes to start, as a flow's history grows.

Mirrorline rebuilds its offset translation store at every start from the runs
topic (`mirrorline.offset-runs.internal`, compacted, one record per run; see
`control/offset_runs.py`). This script replicates a topic of 100 partitions
in stages up to 1,000,000 records and, after each stage, measures:

- the store's start: reading the flow's runs and building the store, as the
  driver does (median of three);
- for comparison, reading the flow's MM2 offset-syncs topic whole, which is
  what rebuilding from syncs would take: it grows with the history;
- the driver's own "translation store loaded" line at its next start.

Run: `.venv/bin/python benchmarks/translation_restart.py [--records N] [--partitions P]`
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "src"))
sys.path.insert(0, str(BENCH_DIR))

from benchlib.common import say, wait_for  # noqa: E402
from benchlib.kafka_data import OffsetWatcher, clusters_running, create_topic  # noqa: E402
from benchlib.replicators import start_replicator, write_replication_config  # noqa: E402
from confluent_kafka import Producer  # noqa: E402

from mirrorline.control.offset_runs import RUNS_TOPIC, read_runs  # noqa: E402
from mirrorline.control.translation import TranslationStore  # noqa: E402
from mirrorline.formats import OffsetSync  # noqa: E402
from mirrorline.kafka import read_to_end  # noqa: E402

TOPIC = "restart-bench"
FLOW = "east->west"
SYNCS_TOPIC = "mm2-offset-syncs.west.internal"
LOADED = re.compile(r"translation store loaded (\d+) runs in (\d+) ms")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--stages", type=int, default=4, help="measurements along the way")
    parser.add_argument("--no-save", action="store_true", help="print only")
    opts = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorline-restart-"))
    rows = []
    with clusters_running(work / "clusters") as (east, west):
        create_topic(east.bootstrap_servers, TOPIC, opts.partitions)
        config = write_replication_config(
            work / "flow.properties", [east, west], TOPIC, opts.partitions
        )
        watcher = OffsetWatcher(west.bootstrap_servers)
        produced = 0
        for stage in range(1, opts.stages + 1):
            target = opts.records * stage // opts.stages
            _produce(east.bootstrap_servers, opts.partitions, produced, target)
            produced = target
            log = work / f"driver-{stage}.log"
            driver = start_replicator("mirrorline", config, work, log)
            say(f"stage {stage}: replicating up to {produced:,} records")
            wait_for(
                lambda n=produced: sum(watcher.end_offsets(f"east.{TOPIC}").values()) >= n,
                timeout=1800,
                what=f"{produced:,} records on west",
                check=driver.check,
            )
            driver.stop()
            driver_line = LOADED.search(log.read_text(errors="replace"))
            row = {
                "records_replicated": produced,
                **_store_start(west.bootstrap_servers),
                **_syncs_read(east.bootstrap_servers),
                # At this stage's start: the history of the stages before it.
                "driver_store_runs": int(driver_line.group(1)) if driver_line else None,
                "driver_store_load_ms": int(driver_line.group(2)) if driver_line else None,
            }
            rows.append(row)
            say(json.dumps(row))
        watcher.close()
    _report(rows, opts, argv)
    return 0


def _produce(bootstrap: str, partitions: int, start: int, end: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    for i in range(start, end):
        while True:
            try:
                producer.produce(TOPIC, value=b"%100d" % i, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0


def _store_start(bootstrap: str) -> dict:
    settings = {"bootstrap.servers": bootstrap}
    times, runs = [], 0
    for _ in range(3):
        began = time.perf_counter()
        store = TranslationStore()
        store.load(read_runs(settings, FLOW))
        times.append((time.perf_counter() - began) * 1000)
        runs = store.run_count()
    records = sum(1 for _ in read_to_end(settings, RUNS_TOPIC))
    return {
        "store_runs": runs,
        "runs_topic_records": records,
        "store_start_ms": round(statistics.median(times), 1),
    }


def _syncs_read(bootstrap: str) -> dict:
    began = time.perf_counter()
    count = 0
    for msg in read_to_end({"bootstrap.servers": bootstrap}, SYNCS_TOPIC):
        OffsetSync.decode(msg.key(), msg.value())
        count += 1
    return {"offset_syncs": count, "syncs_read_ms": round((time.perf_counter() - began) * 1000, 1)}


def _report(rows: list[dict], opts, argv: list[str]) -> None:
    command = " ".join(["benchmarks/translation_restart.py", *argv])
    lines = [
        "| records replicated | runs | runs-topic records read | store start | "
        "MM2 offset syncs | reading them |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['records_replicated']:,} | {r['store_runs']:,} "
            f"| {r['runs_topic_records']:,} | {r['store_start_ms']:.0f} ms "
            f"| {r['offset_syncs']:,} | {r['syncs_read_ms']:.0f} ms |"
        )
    table = "\n".join(lines)
    print(f"\n{table}\n\ncommand: {command}")
    if opts.no_save:
        return
    stamp = datetime.now(UTC).strftime("%Y-%m-%d-%H%M")
    out = BENCH_DIR / "results" / f"translation-restart-{stamp}.json"
    out.write_text(
        json.dumps({"command": command, "partitions": opts.partitions, "rows": rows}, indent=2)
        + "\n"
    )
    say(f"saved {out}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
