"""How fast `mirrorline verify` checks a copy: records compared per second.

Starts two local clusters, produces `--records` small records (100 B values,
`--partitions` partitions, keys and timestamps set) to a source topic and the
same records to its remote topic on the target, writes the flow's runs and
progress with the product's own writers (`TranslationStore` -> `RunLog`,
`ProgressStore`, as a flow's batch committer does), then verifies the flow
in this process (`verification.run.verify_flow`, what `mirrorline verify`
runs) and prints records/s. The verification must find the copy identical.

Run: `.venv/bin/python benchmarks/verify_speed.py [--records N] [--partitions P] [--no-save]`
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH_DIR.parent / "src"), str(BENCH_DIR.parent / "tests"), str(BENCH_DIR)]

from benchlib.common import say  # noqa: E402
from benchlib.environment import environment  # noqa: E402
from benchlib.kafka_data import clusters_running, create_topic  # noqa: E402
from confluent_kafka import Producer  # noqa: E402

from mirrorline.config import load_config  # noqa: E402
from mirrorline.control.translation import Run  # noqa: E402
from mirrorline.flow_context import side_clients  # noqa: E402
from mirrorline.verification.run import verify_flow  # noqa: E402
from support.flow_copy import record_copy  # noqa: E402

TOPIC = "verify-bench"
REMOTE = f"east.{TOPIC}"
VALUE = 100


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--no-save", action="store_true", help="print only")
    opts = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorline-verify-bench-"))
    with clusters_running(work / "clusters") as (east, west):
        create_topic(east.bootstrap_servers, TOPIC, opts.partitions)
        create_topic(west.bootstrap_servers, REMOTE, opts.partitions)
        began = time.perf_counter()
        stamp = int(time.time() * 1000) - 60_000
        for cluster, topic in ((east, TOPIC), (west, REMOTE)):
            _produce(cluster.bootstrap_servers, topic, opts.records, opts.partitions, stamp)
        say(f"produced {opts.records:,} records twice in {time.perf_counter() - began:.1f}s")
        config = work / "verify.properties"
        config.write_text(
            f"clusters = east, west\neast.bootstrap.servers = {east.bootstrap_servers}\n"
            f"west.bootstrap.servers = {west.bootstrap_servers}\n"
            f"east->west.enabled = true\neast->west.topics = {TOPIC}\n"
            "replication.factor = 1\n"
        )
        flow = load_config(config).flow("east", "west")
        source, target = side_clients(flow, "source"), side_clients(flow, "target")
        per_partition = {
            p: len(range(p, opts.records, opts.partitions)) for p in range(opts.partitions)
        }
        record_copy(
            target,
            flow.name,
            {(TOPIC, p): [Run(0, 0, n)] for p, n in per_partition.items()},
            {(TOPIC, p): n for p, n in per_partition.items()},
        )
        began = time.perf_counter()
        report = verify_flow(flow, source, target)
        elapsed = time.perf_counter() - began
        source.close()
        target.close()
    rate = report.checked / elapsed
    result = {
        "records": opts.records,
        "partitions": opts.partitions,
        "value_bytes": VALUE,
        "checked": report.checked,
        "verdict": "identical" if report.identical else "different",
        "differences": report.differences,
        "seconds": round(elapsed, 2),
        "records_per_second": round(rate),
    }
    command = " ".join(["benchmarks/verify_speed.py", *argv])
    print(json.dumps(result, indent=2))
    print(f"{report.checked:,} records verified in {elapsed:.1f}s: {rate:,.0f} records/s")
    if not report.identical or report.checked != opts.records:
        say("the copy was not found identical record by record: the measurement is void")
        return 1
    if not opts.no_save:
        out = BENCH_DIR / "results" / f"verify-speed-{datetime.now(UTC):%Y-%m-%d-%H%M}.json"
        out.write_text(
            json.dumps({"command": command, "environment": environment(), **result}, indent=2)
            + "\n"
        )
        say(f"saved {out}")
    return 0


def _produce(bootstrap: str, topic: str, records: int, partitions: int, stamp: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "acks": "all",
            "enable.idempotence": True,
        }
    )
    for i in range(records):
        while True:
            try:
                producer.produce(
                    topic,
                    key=b"%08d" % i,
                    value=b"%0*d" % (VALUE, i),
                    partition=i % partitions,
                    timestamp=stamp + i // 1000,
                )
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0, f"records to {topic} not delivered"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
