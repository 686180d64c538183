"""`mirrorline driver --master spark://...` on a real Spark standalone cluster.

A master and two workers of one core each run as separate JVMs
(`support.spark_standalone`); the driver is a child process in client mode, so
every record is moved by executors the workers started, which get Spark's Kafka
connector and Mirrorline's writer only from the driver (`spark.jars`) and run no
Python. The replica must equal the source record for record, and the work must
have run on both workers.
"""

from __future__ import annotations

import json
import random
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer

from mirrorline.engine.session import executor_jars
from support.crash_harness import EndOffsets, TopicReader, numbered_record
from support.driver_process import DriverProcess
from support.driving import write_config
from support.kafka_io import create_topic, unique_name
from support.replica_audit import audit_partition
from support.spark_standalone import StandaloneCluster, free_port
from support.wait import wait_until

RECORDS = 200_000
PARTITIONS = 4
WORKERS = 2
# Per partition and micro-batch: several batches, each with a task per partition.
MAX_POLL_RECORDS = 12_000
# What the driver's checkpoint directory may hold: the logs Spark's micro-batch
# engine writes on the driver. Executors would add `state/` (stateful operators).
DRIVER_CHECKPOINT_ENTRIES = {"metadata", "offsets", "commits", "sources"}


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory):
    cluster = StandaloneCluster(
        tmp_path_factory.mktemp("spark-standalone"), workers=WORKERS, cores=1, memory="1g"
    )
    with cluster:
        yield cluster
    assert cluster.processes() == {}, "processes of the Spark cluster outlived its stop()"


def test_driver_replicates_through_executors_on_both_workers(
    two_clusters, standalone: StandaloneCluster, tmp_path: Path
):
    east, west = two_clusters
    topic = unique_name("standalone")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    _produce(east.bootstrap_servers, topic)
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        f"max.poll.records = {MAX_POLL_RECORDS}\n",
    )
    ui_port = free_port()
    work_dir = tmp_path / "driver"
    driver = DriverProcess(
        config,
        work_dir,
        tmp_path / "driver.log",
        driver_args=[
            "--master", standalone.master_url,
            # Spark's REST API of the driver, on a port known to the test.
            "--spark-conf", f"spark.ui.port={ui_port}",
        ],
    )  # fmt: skip
    target_ends = EndOffsets(west.bootstrap_servers)
    with driver:
        checkpoint_entries: set[str] = set()
        cluster_commands: set[str] = set()

        def replicated() -> bool:
            driver.check()
            checkpoint_entries.update(_checkpoint_entries(work_dir))
            cluster_commands.update(standalone.processes().values())
            return sum(target_ends(remote, PARTITIONS).values()) >= RECORDS

        wait_until(
            replicated,
            timeout=150,
            what=f"{RECORDS} records in west/{remote} (driver log: {driver.log_path})",
            interval=0.5,
        )
        app_id, executors = _executors(ui_port)
        assert driver.stop(), f"the driver did not stop cleanly:\n{driver.log_tail()}"
    target_ends.close()

    # Both executors ran tasks, one on each worker, and loaded the jars the driver
    # served: each executor's work directory holds those it fetched.
    assert len(executors) == WORKERS, executors
    assert all(e["completedTasks"] > 0 for e in executors), executors
    per_worker = standalone.executors_of(app_id)
    assert sorted(len(found) for found in per_worker.values()) == [1] * WORKERS, per_worker
    executor_dirs = standalone.executor_dirs(app_id)
    assert len(executor_dirs) == WORKERS
    served = {jar.name for jar in executor_jars()}
    assert any(name.startswith("spark-sql-kafka") for name in served), served
    assert any(name.startswith("mirrorline-writer") for name in served), served
    for directory in executor_dirs:
        fetched = {p.name for p in directory.glob("*.jar")}
        assert served <= fetched, (directory, served - fetched)
    # Executors are JVMs only: no process of the cluster ever ran Python.
    executor_commands = [c for c in cluster_commands if "CoarseGrainedExecutorBackend" in c]
    assert len(executor_commands) == WORKERS, cluster_commands
    programs = {c.split(" ", 1)[0].rsplit("/", 1)[-1] for c in cluster_commands}
    assert "java" in programs, cluster_commands
    assert not [p for p in programs if p.startswith("python")], cluster_commands
    # The query is stateless: only the driver wrote its checkpoint.
    assert {"offsets", "commits"} <= checkpoint_entries, checkpoint_entries
    assert checkpoint_entries <= DRIVER_CHECKPOINT_ENTRIES, checkpoint_entries

    audits = _audit(east.bootstrap_servers, topic, west.bootstrap_servers, remote)
    assert [a.problems for a in audits] == [[]] * PARTITIONS
    assert [a.lost for a in audits] == [0] * PARTITIONS
    assert [a.duplicates for a in audits] == [[0]] * PARTITIONS
    assert sum(a.records for a in audits) == RECORDS
    assert [a.replicated for a in audits] == [a.records for a in audits]


def _produce(bootstrap: str, topic: str) -> None:
    """RECORDS small numbered records, round-robin over the partitions, each once."""
    rng = random.Random(7)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20}
    )
    failures: list[str] = []

    def delivered(error, _msg) -> None:
        if error is not None:
            failures.append(error.str())

    for seq in range(RECORDS):
        partition, key, value, headers = numbered_record(seq, PARTITIONS, rng)
        while True:
            try:
                producer.produce(
                    topic,
                    key=key,
                    value=value,
                    partition=partition,
                    headers=headers,
                    on_delivery=delivered,
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0 and not failures, failures[:3]


def _checkpoint_entries(work_dir: Path) -> set[str]:
    """Names inside the flow's query checkpoint(s): checkpoints/<flow>/<start>/<entry>."""
    return {p.name for p in work_dir.glob("checkpoints/*/*/*") if not p.name.startswith(".")}


def _executors(ui_port: int) -> tuple[str, list[dict]]:
    """The driver's application id and its executors (not the driver) from Spark's REST API."""
    base = f"http://127.0.0.1:{ui_port}/api/v1/applications"
    with urllib.request.urlopen(base, timeout=10) as response:
        (app,) = json.load(response)
    with urllib.request.urlopen(f"{base}/{app['id']}/executors", timeout=10) as response:
        executors = [e for e in json.load(response) if e["id"] != "driver"]
    return app["id"], executors


def _audit(source: str, topic: str, target: str, remote: str):
    readers = [
        TopicReader(source, topic, PARTITIONS, "read_uncommitted"),
        TopicReader(target, remote, PARTITIONS, "read_uncommitted"),
    ]
    try:
        for reader in readers:
            reader.drain()
    finally:
        for reader in readers:
            reader.close()
    original, replica = readers
    return [audit_partition(p, original.logs[p], replica.logs[p], []) for p in range(PARTITIONS)]
