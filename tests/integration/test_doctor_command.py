"""`mirrorline doctor` run as an SRE runs it, a process of its own, on this host and against
real clusters: each broken thing is one line with its cause and fix, and the exit code says it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from confluent_kafka.admin import AclOperation

from mirrorline.devcluster import DevClusters
from mirrorline.process import free_port
from support.driver_process import child_env
from support.driving import write_config
from support.kafka_io import create_topic, unique_name
from support.secured import (
    PRINCIPAL,
    grant_documented,
    revoke,
    secured_config,
    topic_acl,
    topic_acls,
)
from support.wait import wait_until


def doctor(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m mirrorline doctor ARGS` in `env` (default: this Mirrorline's), to its end."""
    done = subprocess.run(
        [sys.executable, "-m", "mirrorline", "doctor", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,  # well above any --timeout given: a bound, not a measurement
        env=child_env() if env is None else env,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def failures(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("FAIL ")]


def test_a_good_plaintext_configuration_is_all_good(two_clusters, tmp_path: Path):
    config = write_config(
        tmp_path / "good.properties",
        two_clusters,
        "east->west.enabled = true\neast->west.topics = doctor-.*\n",
    )
    done = doctor("--config", config, "--timeout", 5)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "all good"
    for check in ("java", "writer jar", "jars spark-kafka", "pyspark", "cluster east", "acls west"):
        assert f"ok   {check}: " in done.stdout, done.stdout


def test_java_missing_from_the_path_is_named_with_its_fix(tmp_path: Path):
    env = {**child_env(), "PATH": str(tmp_path)}  # a directory with no `java` in it
    env.pop("JAVA_HOME", None)
    done = doctor(env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert failures(done) == [
        "FAIL java: Java 17+ not found (no `java` on PATH) — fix: install OpenJDK 17 or newer "
        "(Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
    ]
    assert done.stdout.splitlines()[-1] == "1 problem"


def test_an_empty_jar_cache_asks_for_mirrorline_setup(tmp_path: Path):
    empty = tmp_path / "jvm"
    empty.mkdir()
    done = doctor(env={**child_env(), "MIRRORLINE_JVM_LIB": str(empty)})
    assert done.returncode == 1, done.stdout + done.stderr
    connector, transforms = failures(done)
    assert connector.startswith("FAIL jars spark-kafka: Spark's Kafka connector")
    assert transforms.startswith("FAIL jars connect-transforms: ")
    for missing in (connector, transforms):
        fix = f"fix: run `mirrorline setup` (fetches them from Maven Central into {empty})"
        assert fix in missing
    # The broker jars are only for `mirrorline dev up`: a warning, not a failure.
    assert any(line.startswith("warn jars kafka: ") for line in done.stdout.splitlines())


def test_a_cluster_nobody_answers_for_fails_within_the_timeout(two_clusters, tmp_path: Path):
    east = two_clusters[0]
    gone = SimpleNamespace(alias="gone", bootstrap_servers=f"127.0.0.1:{free_port()}")
    config = write_config(tmp_path / "gone.properties", [east, gone], "east->gone.enabled = true\n")
    done = doctor("--config", config, "--timeout", 5, "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    checks = {c["check"]: c for c in report["checks"]}
    assert report["ok"] is False and checks["cluster east"]["ok"] is True
    problem = checks["cluster gone"]
    assert problem["problem"].startswith(
        f"gone: no broker answers at {gone.bootstrap_servers} within 5s"
    )
    assert problem["fix"] == (
        "check gone.bootstrap.servers, the network, and that the brokers run "
        "(with a PLAINTEXT listener)"
    )


def test_a_wrong_password_is_an_authentication_failure_never_shown(
    secured_clusters: DevClusters, tmp_path: Path
):
    dev = secured_clusters
    wrong = "not-the-Passw0rd"
    lines = dev.properties_file.read_text().splitlines()
    right = f"${{file:{dev.security.secrets_file}:mirrorline.password}}"
    lines = [
        line.replace(right, wrong) if line.startswith("east.sasl.jaas.config") else line
        for line in lines
    ]
    config = tmp_path / "wrong-password.properties"
    config.write_text("\n".join(lines) + "\neast->west.enabled = true\neast->west.topics = x\n")
    jaas_line = next(i for i, line in enumerate(lines, 1) if line.startswith("east.sasl.jaas"))

    done = doctor("--config", config, "--timeout", 5)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "FAIL east: authentication failed for mirrorline — fix: check sasl.jaas.config / "
        f"the password in {config}:{jaas_line} (east.sasl.jaas.config)"
    ) in failures(done)
    output = done.stdout + done.stderr
    assert wrong not in output and dev.security.password("mirrorline") not in output


def test_a_missing_acl_is_named_with_its_grant_command(
    secured_clusters: DevClusters, tmp_path: Path
):
    dev = secured_clusters
    topic = unique_name("doctor")
    config = secured_config(
        tmp_path / "acls.properties",
        dev,
        f"east->west.enabled = true\neast->west.topics = {topic}\n",
    )
    create_topic(dev.client_config("east"), topic)
    grant_documented(dev, config)
    revoke(dev, "east", topic_acl(topic, PRINCIPAL, AclOperation.READ))
    wait_until(
        lambda: _read_or_describe(dev, topic) == {"DESCRIBE"},
        timeout=30,
        what=f"{PRINCIPAL} allowed DESCRIBE but not READ on {topic}",
    )

    done = doctor("--config", config, "--timeout", 10)
    assert done.returncode == 1, done.stdout + done.stderr
    assert failures(done) == [
        f"FAIL east denies READ on topic {topic} to {PRINCIPAL} (needed for: read topics) — fix: "
        "kafka-acls.sh --bootstrap-server <east> --command-config <admin.properties> --add "
        f"--allow-principal {PRINCIPAL} --operation Read --topic '{topic}'"
    ]
    assert "ok   acls west: nothing denied" in done.stdout


def _read_or_describe(dev: DevClusters, topic: str) -> set[str]:
    """Which of READ and DESCRIBE the brokers of east now allow the replication user on `topic`."""
    return {
        operation
        for principal, operation, permission in topic_acls(dev, "east", topic)
        if principal == PRINCIPAL and permission == "ALLOW" and operation in ("READ", "DESCRIBE")
    }
