"""Mirrorline as a user installs it: a wheel in a fresh virtualenv, far from any checkout.

The wheel is built from this checkout (`pip wheel`: it packs the writer jar that
`make jvm` built) and installed into a new virtualenv in a temporary directory,
its dependencies from PyPI as a user gets them. Every command then runs that
virtualenv's `mirrorline` from a working directory outside the checkout, with no
MIRRORLINE_* variable and HOME pointing to a directory that starts empty: the
jars the wheel does not carry (Spark's Kafka connector, the dev clusters' broker)
are fetched from Maven Central into that HOME's cache, as on a new host.

- `mirrorline dev up` and `mirrorline driver` replicate 1,000 records, and no file
  of the virtualenv names a path of the checkout; the driver logs as a service's
  log shipper wants it (`--log-format json`: every line one JSON object) and
  stops cleanly on SIGTERM to its process group;
- the same package drives a real Spark standalone cluster (a master and two
  workers of one core each, started from the virtualenv's own PySpark): every
  record is moved by executors the workers started, which get Spark's Kafka
  connector and Mirrorline's writer only from the driver (`spark.jars`) and run
  no Python. The replica must equal the source record for record, and the work
  must have run on both workers. The flow also runs a single message transform of
  the user's own (a class compiled here, in a jar named by `plugin.path`) on a
  second topic, guarded by Kafka Connect's TopicNameMatches: both reach the
  executors only through the driver (Connect's transforms fetched into the user's
  cache, the user's jar from `plugin.path`).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer

import mirrorline
from mirrorline.process import free_port
from support.crash_harness import EndOffsets, TopicReader, numbered_record
from support.driver_process import DriverProcess
from support.driving import write_config
from support.kafka_io import consume, create_topic, unique_name
from support.replica_audit import audit_partition
from support.spark_standalone import StandaloneCluster
from support.wait import wait_until

CHECKOUT = Path(mirrorline.__file__).resolve().parents[2]
PARTITIONS = 4
WORKERS = 2
# micro-batch.max.records: several batches, each with a task per partition.
BATCH_RECORDS = 48_000
# What the driver's checkpoint directory may hold: the logs Spark's micro-batch
# engine writes on the driver. Executors would add `state/` (stateful operators).
DRIVER_CHECKPOINT_ENTRIES = {"metadata", "offsets", "commits", "sources"}
# A user's own transform: stamps each record with a header whose value is its setting.
USER_SMT = """
package example;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.transforms.Transformation;

public class Stamp<R extends ConnectRecord<R>> implements Transformation<R> {
  private byte[] value;

  @Override
  public R apply(R record) {
    record.headers().addBytes("stamped.by", value);
    return record;
  }

  @Override
  public ConfigDef config() {
    return new ConfigDef().define("value", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "");
  }

  @Override
  public void configure(Map<String, ?> configs) {
    value = ((String) configs.get("value")).getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void close() {}
}
"""


@dataclass(frozen=True)
class Installed:
    venv: Path
    home: Path  # the user's HOME: empty at first
    workdir: Path  # where commands run, outside the checkout

    @property
    def mirrorline(self) -> list[str]:
        return [str(self.venv / "bin" / "mirrorline")]

    @property
    def spark_home(self) -> Path:
        (site,) = (self.venv / "lib").glob("python3*/site-packages")
        return site / "pyspark"

    def env(self) -> dict[str, str]:
        """The environment of a new user of the package: no MIRRORLINE_* variable, no
        path into the checkout, HOME (and so every cache) in a fresh directory."""
        dropped = ("PYTHONPATH", "VIRTUAL_ENV", "XDG_CACHE_HOME", "XDG_STATE_HOME", "SPARK_HOME")
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("MIRRORLINE_") and k not in dropped
        }
        path = [p for p in env.get("PATH", "").split(os.pathsep) if not _in_checkout(p)]
        env["PATH"] = os.pathsep.join([str(self.venv / "bin"), *path])
        env["HOME"] = str(self.home)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*self.mirrorline, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(),
            cwd=self.workdir,
            check=False,
        )
        assert done.returncode == 0, f"mirrorline {' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done


def _in_checkout(path: str) -> bool:
    return bool(path) and Path(path).resolve().is_relative_to(CHECKOUT)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("installed")
    wheels, venv = base / "wheels", base / "venv"
    pip = [sys.executable, "-m", "pip"]
    subprocess.run(
        [*pip, "wheel", str(CHECKOUT), "--no-deps", "--quiet", "--wheel-dir", str(wheels)],
        check=True,
        cwd=base,
    )
    (wheel,) = wheels.glob("mirrorline-*.whl")
    # From the interpreter the checkout's virtualenv was made from: a virtualenv
    # records its base interpreter (pyvenv.cfg), which must not be the checkout's.
    base_python = (
        Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    )
    subprocess.run([str(base_python), "-m", "venv", str(venv)], check=True)
    # Without the caller's PYTHONPATH: a checkout's src/ on it (with the egg-info that
    # `pip wheel` leaves there) would make pip take the package as installed already.
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", str(wheel)], check=True, env=clean
    )
    home, workdir = base / "home", base / "work"
    home.mkdir()
    workdir.mkdir()
    return Installed(venv, home, workdir)


@pytest.fixture(scope="module")
def installed_clusters(installed: Installed):
    """Two dev clusters started by the installed package's `mirrorline dev up`."""
    done = installed.run("dev", "up", "--dir", "dev", "--json")
    started = json.loads(done.stdout)
    yield started
    installed.run("dev", "down", "--dir", "dev")


def test_wheel_replicates_from_outside_the_checkout(installed: Installed, installed_clusters):
    servers = {c["alias"]: c["bootstrap_servers"] for c in installed_clusters["clusters"]}
    topic = unique_name("installed")
    records = 1_000
    create_topic(servers["east"], topic, partitions=PARTITIONS)
    _produce(servers["east"], topic, records)
    config = installed.workdir / "installed.properties"
    config.write_text(
        Path(installed_clusters["properties_file"]).read_text()
        + f"east->west.enabled = true\neast->west.topics = {topic}\n"
    )
    driver = DriverProcess(
        config,
        installed.workdir / "driver",
        installed.workdir / "driver.log",
        program=installed.mirrorline,
        env=installed.env(),
        cwd=installed.workdir,
        global_args=["--log-format", "json"],
    )
    ends = EndOffsets(servers["west"])
    with driver:
        wait_until(
            lambda: driver.check() or sum(ends(f"east.{topic}", PARTITIONS).values()) >= records,
            timeout=300,
            what=f"{records} records in west/east.{topic} (driver log: {driver.log_path})",
            interval=0.5,
        )
        assert driver.stop(group=True), f"the driver did not stop cleanly:\n{driver.log_tail()}"
    ends.close()
    log = driver.log_path.read_text()
    assert "Traceback" not in log, log
    logged = [json.loads(line) for line in log.splitlines()]
    assert all({"time", "level", "logger", "flow", "message"} <= e.keys() for e in logged)
    assert any(e["flow"] == "east->west" and "records" in e["message"] for e in logged), log
    assert logged[-1]["message"] == "driver stopped", log
    audits = _audit(servers["east"], topic, servers["west"], f"east.{topic}")
    assert [(a.problems, a.lost, a.duplicates) for a in audits] == [([], 0, [0])] * PARTITIONS
    assert sum(a.replicated for a in audits) == records

    # The jars came from Maven Central into the user's cache, not from the checkout.
    cache = installed.home / ".cache" / "mirrorline" / "jvm"
    assert {"kafka", "spark-kafka"} <= {p.name for p in cache.iterdir()}
    found = subprocess.run(
        ["grep", "-r", "-l", "-F", str(CHECKOUT), str(installed.venv)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 1, f"files of the virtualenv name the checkout:\n{found.stdout}"


@pytest.fixture(scope="module")
def standalone(installed: Installed, tmp_path_factory: pytest.TempPathFactory):
    cluster = StandaloneCluster(
        tmp_path_factory.mktemp("spark-standalone"),
        workers=WORKERS,
        cores=1,
        memory="1g",
        spark_home=installed.spark_home,
    )
    with cluster:
        yield cluster
    assert cluster.processes() == {}, "processes of the Spark cluster outlived its stop()"


def test_installed_package_replicates_through_executors_on_both_workers(
    installed: Installed, two_clusters, standalone: StandaloneCluster, tmp_path: Path
):
    east, west = two_clusters
    records = 200_000
    topic, stamped = unique_name("standalone"), unique_name("stamped")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    _produce(east.bootstrap_servers, topic, records)
    create_topic(east.bootstrap_servers, stamped, partitions=PARTITIONS)
    _produce(east.bootstrap_servers, stamped, 100)
    plugins = _user_smt_jar(tmp_path / "plugins")
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}, {stamped}\n"
        f"micro-batch.max.records = {BATCH_RECORDS}\n"
        f"plugin.path = {plugins}\n"
        "east->west.transforms = stamp\n"
        "east->west.transforms.stamp.type = example.Stamp\n"
        "east->west.transforms.stamp.value = user-smt\n"
        "east->west.transforms.stamp.predicate = isStamped\n"
        "east->west.predicates = isStamped\n"
        "east->west.predicates.isStamped.type = "
        "org.apache.kafka.connect.transforms.predicates.TopicNameMatches\n"
        f"east->west.predicates.isStamped.pattern = east[.]{stamped}\n",
    )
    ui_port = free_port()
    work_dir = tmp_path / "driver"
    driver = DriverProcess(
        config,
        work_dir,
        tmp_path / "driver.log",
        driver_args=[
            "--master", standalone.master_url,
            # Spark's REST API of the driver (its web UI, off by default), on a
            # port known to the test.
            "--spark-conf", "spark.ui.enabled=true",
            "--spark-conf", f"spark.ui.port={ui_port}",
        ],
        program=installed.mirrorline,
        env=installed.env(),
        cwd=installed.workdir,
    )  # fmt: skip
    target_ends = EndOffsets(west.bootstrap_servers)
    with driver:
        checkpoint_entries: set[str] = set()
        cluster_commands: set[str] = set()

        def replicated() -> bool:
            driver.check()
            checkpoint_entries.update(_checkpoint_entries(work_dir))
            cluster_commands.update(standalone.processes().values())
            return (
                sum(target_ends(remote, PARTITIONS).values()) >= records
                and sum(target_ends(f"east.{stamped}", PARTITIONS).values()) >= 100
            )

        wait_until(
            replicated,
            timeout=300,
            what=f"{records} records in west/{remote} (driver log: {driver.log_path})",
            interval=0.5,
        )
        app_id, executors = _executors(ui_port)
        assert driver.stop(), f"the driver did not stop cleanly:\n{driver.log_tail()}"
    target_ends.close()

    # Both executors ran tasks, one on each worker, and loaded the jars the driver
    # served from the installed package and the user's jar cache.
    assert len(executors) == WORKERS, executors
    assert all(e["completedTasks"] > 0 for e in executors), executors
    per_worker = standalone.executors_of(app_id)
    assert sorted(len(found) for found in per_worker.values()) == [1] * WORKERS, per_worker
    executor_dirs = standalone.executor_dirs(app_id)
    assert len(executor_dirs) == WORKERS
    for directory in executor_dirs:
        fetched = {p.name for p in directory.glob("*.jar")}
        assert "mirrorline-writer.jar" in fetched, (directory, fetched)
        assert any(name.startswith("spark-sql-kafka-0-10") for name in fetched), fetched
        assert any(name.startswith("connect-transforms-") for name in fetched), fetched
        assert "stamp.jar" in fetched, fetched
    # Executors are JVMs only: no process of the cluster ever ran Python.
    executor_commands = [c for c in cluster_commands if "CoarseGrainedExecutorBackend" in c]
    assert len(executor_commands) == WORKERS, cluster_commands
    assert all(str(installed.spark_home) in c for c in executor_commands), executor_commands
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
    assert sum(a.records for a in audits) == records
    assert [a.replicated for a in audits] == [a.records for a in audits]
    # The user's transform ran on every record of the second topic, and only there.
    copies = consume(west.bootstrap_servers, f"east.{stamped}", expected=100, timeout=30)
    assert len(copies) == 100
    assert all(dict(c.headers).get("stamped.by") == b"user-smt" for c in copies)


def _user_smt_jar(directory: Path) -> Path:
    """A jar with the user's own transform, compiled against Kafka Connect's API."""
    from mirrorline import jvm

    source = directory / "src" / "example" / "Stamp.java"
    source.parent.mkdir(parents=True)
    source.write_text(USER_SMT)
    classes = directory / "classes"
    api = ":".join(str(j) for j in jvm.jars("connect-transforms"))
    subprocess.run(["javac", "-d", str(classes), "-cp", api, str(source)], check=True)
    jars = directory / "jars"
    jars.mkdir()
    subprocess.run(["jar", "cf", str(jars / "stamp.jar"), "-C", str(classes), "."], check=True)
    return jars


def _produce(bootstrap: str, topic: str, records: int) -> None:
    """`records` small numbered records, round-robin over the partitions, each once."""
    rng = random.Random(7)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20}
    )
    failures: list[str] = []

    def delivered(error, _msg) -> None:
        if error is not None:
            failures.append(error.str())

    for seq in range(records):
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
