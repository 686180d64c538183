"""`mirrorline verify` on the real two clusters, without Spark.

The copies are produced here and their runs and progress written by the
product's own writers (`support.flow_copy`), as a flow leaves them. One
topic is an exact copy (with provenance headers, a range before the first
run and records past the progress); the other has a lost record the runs
say was copied, a changed header and a duplicate a replay would leave. The
service's collector then reads the last verification from the target.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config import load_config
from mirrorline.control.translation import Run
from mirrorline.engine.provenance import HEADER
from mirrorline.service.collector import TargetCollector, sources_for
from mirrorline.service.replications import replication
from support.driving import write_config
from support.flow_copy import record_copy
from support.kafka_io import (
    Record,
    cluster_clients,
    conf,
    create_topic,
    produce,
    unique_name,
    varied_records,
)
from support.wait import wait_until

FLOW = "east->west"
PER_PARTITION = 20


def _source(east, topic: str, partitions: int, seed: int) -> dict[int, list[Record]]:
    create_topic(east.bootstrap_servers, topic, partitions=partitions)
    delivered = produce(
        east.bootstrap_servers, topic, varied_records(PER_PARTITION * partitions, seed, partitions)
    )
    out: dict[int, list[Record]] = {}
    for r in sorted(delivered, key=lambda r: (r.partition, r.offset)):
        out.setdefault(r.partition, []).append(r)
    return out


def _copy(west, remote: str, copies: dict[int, list[Record]]) -> None:
    create_topic(west.bootstrap_servers, remote, partitions=len(copies))
    produce(
        west.bootstrap_servers,
        remote,
        [replace(r, partition=p) for p, records in copies.items() for r in records],
    )


def _last_verification(config: Path, west) -> dict | None:
    loaded = load_config(config)
    settings = conf(west.bootstrap_servers)
    collector = TargetCollector(
        "west",
        admin_settings=settings,
        consumer_settings=settings,
        sources=sources_for([loaded.flow("east", "west")], loaded.clusters),
        history_s=60,
    )
    collector.start()
    try:
        # catch_up gives up at once when a probe found west not answering, which a busy
        # machine can make happen once: the next probe, two seconds on, decides again.
        wait_until(lambda: collector.catch_up(10), timeout=90, what="the service to read west")
        now = int(time.time() * 1000)
        return collector.view.read(lambda v: replication(v, FLOW, "east", now).last_verification)
    finally:
        collector.close()


def _verify(config: Path, *args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(
        app, ["verify", "-c", str(config), "-s", "east", "-t", "west", "--json", *args]
    )
    return result.exit_code, json.loads(result.stdout)


def test_verify_finds_each_difference_by_offset(two_clusters, tmp_path: Path) -> None:
    east, west = two_clusters
    config = write_config(tmp_path / "mm2.properties", two_clusters, "east->west.enabled = true\n")
    target = cluster_clients(west)

    # An exact copy. Partition 0: the flow's first run starts at 5 (0..4 copied before it,
    # without a mapping); partition 1: its progress is at 15 (15..19 not yet copied).
    good = unique_name("verified")
    source = _source(east, good, 2, seed=1)
    provenance = ((HEADER, b"somecluster:" + good.encode()),)
    _copy(
        west,
        f"east.{good}",
        {
            0: [replace(r, headers=r.headers + provenance) for r in source[0]],
            1: source[1][:15],
        },
    )
    runs = {(good, 0): [Run(5, 5, 15)], (good, 1): [Run(0, 0, 15)]}
    record_copy(target, FLOW, runs, {(good, 0): 20, (good, 1): 15})

    code, report = _verify(config, "--topics", good)
    assert code == 0, report
    assert report["verdict"] == "identical" and report["recorded"] is True
    summary = report["topics"][0]["summary"]
    assert summary["checked"] == 30
    assert summary["not_covered"] == 5 and summary["not_yet_copied"] == 5

    # --since resolves per partition to the first record at or after the time.
    since = source[1][10].timestamp
    code, report = _verify(config, "--topics", good, "--since", str(since))
    assert code == 0, report
    starts = {p["partition"]: p["range"]["start"] for p in report["topics"][0]["partitions"]}
    for partition, first_run in ((0, 5), (1, 0)):
        at = [r.offset for r in source[partition] if r.timestamp >= since]
        assert starts[partition] == max(first_run, min(at, default=PER_PARTITION)), partition

    # A copy with three defects, one per partition.
    bad = unique_name("damaged")
    source = _source(east, bad, 3, seed=2)
    changed = replace(source[1][5], headers=(("trace-id", b"changed"),))
    _copy(
        west,
        f"east.{bad}",
        {
            0: source[0][:7] + source[0][8:],  # record 7 lost; the runs say it was copied
            1: source[1][:5] + [changed] + source[1][6:],
            2: source[2][:10] + [source[2][9]] + source[2][10:],  # a replay wrote 9 again
        },
    )
    runs = {
        (bad, 0): [Run(0, 0, 20)],
        (bad, 1): [Run(0, 0, 20)],
        (bad, 2): [Run(0, 0, 10), Run(10, 11, 10)],
    }
    record_copy(target, FLOW, runs, {(bad, p): PER_PARTITION for p in range(3)})

    code, report = _verify(config, "--topics", bad)
    assert code == 1, report
    assert report["verdict"] == "different"
    parts = {p["partition"]: p for p in report["topics"][0]["partitions"]}
    assert parts[0]["missing"] == {
        "count": 1,
        "first": [{"source_offset": 7, "target_offset": 7}],
    }
    assert parts[0]["misplaced"]["count"] == 12  # 8..19 sit one offset early
    assert parts[1]["different"] == {
        "count": 1,
        "first": [{"source_offset": 5, "target_offset": 5, "fields": ["headers"]}],
    }
    assert parts[2]["extra"] == {
        "count": 1,
        "first": [{"target_offset": 10, "duplicate_of": 9}],
    }
    assert report["differences"] == 1 + 12 + 1 + 1

    # Both topics together, read for people: still different; the table names the offsets.
    result = CliRunner().invoke(
        app, ["verify", "-c", str(config), "-s", "east", "-t", "west", "--topics", f"{good},{bad}"]
    )
    assert result.exit_code == 1
    assert f"{bad}[0] missing (1): 7→7" in result.stdout

    # The service reads the last verification from the target, as it reads the flow's topics.
    shown = _last_verification(config, west)
    assert shown is not None and shown["verdict"] == "different"
    assert shown["topics"] == f"{good},{bad}" and shown["checked"] == 30 + 60
    assert (shown["missing"], shown["extra"], shown["different"]) == (1, 1, 1)

    code, report = _verify(config, "--topics", "no-such-topic")
    assert code == 2 and "no-such-topic" in report["error"]
