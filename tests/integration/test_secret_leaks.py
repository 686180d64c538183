"""No password, token or store secret appears anywhere Mirrorline writes, at debug level.

Everything runs as the commands a user runs, at `--log-level debug` with librdkafka's
security, broker and protocol debug contexts on, against the secured clusters, with
failures provoked on purpose: a wrong password, an ACL denied, a broker nobody
answers on, a configuration that cannot be parsed. Then every output (the commands'
stdout and stderr, the driver's Spark work directory, the service's answers and its
log) is searched for every secret.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

from confluent_kafka.admin import AclOperation

from mirrorline.devcluster import DevClusters
from mirrorline.devsecurity import REPLICATION_USER
from mirrorline.process import free_port
from support.driver_process import DriverProcess, child_env
from support.kafka_io import (
    Record,
    commit_offsets,
    create_topic,
    end_offsets,
    produce,
    unique_name,
)
from support.secured import PRINCIPAL, grant_documented, revoke, secured_config, topic_acl
from support.service import Protection, fetch
from support.wait import wait_until


def test_no_secret_reaches_any_output(secured_clusters: DevClusters, tmp_path):
    dev = secured_clusters
    east, west = dev.client_config("east"), dev.client_config("west")
    wrong_password = "wrong-" + secrets.token_urlsafe(12)
    (tmp_path / "wrong.properties").write_text(f"password={wrong_password}\n")
    good, denied = unique_name("good"), unique_name("denied")
    group = unique_name("app")
    body = f"""east->west.enabled = true
east->west.topics = {good}
east->west.groups = {group}
west->east.enabled = true
west->east.topics = {denied}
east->bad.enabled = true
east->bad.topics = {good}
east->gone.enabled = true
east->gone.topics = {good}
debug = security,broker,protocol
"""
    config = secured_config(tmp_path / "leaks.properties", dev, body)
    _add_clusters(config, dev, tmp_path / "wrong.properties")
    grant_documented(dev, config)
    create_topic(east, good, 2)
    create_topic(west, denied, 1)
    produce(east, good, [Record(None, b"g%d" % i, partition=i % 2) for i in range(200)])
    produce(west, denied, [Record(None, b"d%d" % i) for i in range(10)])
    commit_offsets(east, group, good, {0: 40, 1: 60})
    revoke(dev, "west", topic_acl(denied, PRINCIPAL, AclOperation.READ))

    protection = Protection(tmp_path / "service")
    user_password = secrets.token_urlsafe(16)
    token = "mlt_" + secrets.token_urlsafe(24)
    viewer = protection.add_user("viewer", user_password)
    protection.add_token("scraper", token)
    secret_values = {
        "replication password": dev.security.password(REPLICATION_USER),
        "admin password": dev.security.password("admin"),
        "wrong password": wrong_password,
        "service user password": user_password,
        "service token": token,
    }
    outputs: dict[str, str] = {}

    outputs["config check"] = _run(["config", "check", str(config)])
    outputs["acls"] = _run(["acls", "--config", str(config)])
    broken = tmp_path / "broken.properties"
    broken.write_text(
        config.read_text()
        + f'east.sasl.jaas.config = ScramLoginModule required password="{wrong_password}\n'
    )
    outputs["config check of a broken file"] = _run(["config", "check", str(broken)])
    outputs["driver of a broken file"] = _run(["driver", "--config", str(broken)])

    log = tmp_path / "driver.log"
    work = tmp_path / "work"
    with DriverProcess(
        config, work, log, status_every=2, global_args=("--log-level", "debug")
    ) as driver:
        wait_until(
            lambda: driver.check() or sum(end_offsets(west, f"east.{good}").values()) == 200,
            timeout=180,
            what="the good flow replicating over SASL_SSL",
        )
        wanted = {
            "west->east": f"west denies READ on topic {denied}",
            # A wrong password and a broker nobody listens on, in librdkafka's words.
            "east->bad": "invalid credentials",
            "east->gone": "Connection refused",
        }
        wait_until(
            lambda: driver.check() or _statuses_say(log, wanted),
            timeout=120,
            what="the denied, unauthenticated and unreachable flows in the status",
        )
        outputs["status"] = _run(["status", "--config", str(config), "--json"])
        outputs["offsets export"] = _run(
            ["offsets", "export", "-c", str(config), "-s", "east", "-t", "west", "-g", group]
        )
        outputs["service"] = _service_outputs(config, protection, viewer, tmp_path)
        driver.stop()
    outputs["driver"] = log.read_text(errors="replace")
    outputs["driver work directory"] = _read_tree(work)

    assert "SASL" in outputs["driver"], "librdkafka's security debugging is in the output"
    assert "/v2/replications 401" in outputs["service"]
    assert "/v2/replications 200" in outputs["service"]
    assert "error" in outputs["config check of a broken file"].lower()
    # The commands reached the secured clusters with the file's settings.
    assert '"flow": "east->west"' in outputs["status"]
    assert f"east.{good}" in outputs["offsets export"]
    leaks = [
        f"{secret} in {where}"
        for where, text in outputs.items()
        for secret, value in secret_values.items()
        if value in text
    ]
    assert leaks == []


def _statuses_say(log: Path, wanted: dict[str, str]) -> bool:
    """Whether the latest status line of each flow in `wanted` holds its text."""
    latest: dict[str, str] = {}
    for line in log.read_text(errors="replace").splitlines():
        flow = line.split(": ", 1)[0]
        if flow in wanted:
            latest[flow] = line
    return all(text in latest.get(flow, "") for flow, text in wanted.items())


def _add_clusters(config: Path, dev: DevClusters, wrong: Path) -> None:
    """`bad`: west with a wrong password; `gone`: a port nobody listens on."""
    west = dev.get("west").bootstrap_servers
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{REPLICATION_USER}" password="${{file:{wrong}:password}}";'
    )
    lines = config.read_text().splitlines()
    lines = [f"{line}, bad, gone" if line.startswith("clusters =") else line for line in lines]
    for alias, servers in (("bad", west), ("gone", f"127.0.0.1:{free_port()}")):
        lines += [
            f"{alias}.bootstrap.servers = {servers}",
            f"{alias}.security.protocol = SASL_SSL",
            f"{alias}.sasl.mechanism = SCRAM-SHA-512",
            f"{alias}.ssl.truststore.type = PEM",
            f"{alias}.ssl.truststore.location = {dev.security.ca_file}",
        ]
    lines.append(f"bad.sasl.jaas.config = {jaas}")
    gone_jaas = [line for line in lines if line.startswith("east.sasl.jaas.config")][0]
    lines.append(gone_jaas.replace("east.", "gone.", 1))
    config.write_text("\n".join(lines) + "\n")


def _service_outputs(config: Path, protection: Protection, viewer, tmp_path: Path) -> str:
    service_config = tmp_path / "service.properties"
    port = free_port()
    service_config.write_text(
        config.read_text()
        + protection.settings()
        + "service.clusters = west, east\n"
        + f"service.port = {port}\n"
    )
    log = tmp_path / "service.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mirrorline", "--log-level", "debug", "service"]
            + ["--config", str(service_config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_env(),
        )
    answers = []
    try:
        base = f"https://127.0.0.1:{port}"
        wait_until(
            lambda: process.poll() is None and _answers(f"{base}/health", viewer),
            timeout=60,
            what="the protected service",
        )
        anonymous = protection.caller
        wrong = protection.caller.with_user("viewer", "not-" + secrets.token_hex(4))
        for path in ("/v2/replications", "/metrics", "/health", "/openapi.json", "/"):
            for caller in (anonymous, wrong, viewer):
                status, headers, body = fetch(base + path, caller)
                answers.append(f"{path} {status} {headers} {body.decode(errors='replace')}")
    finally:
        process.terminate()
        process.wait(30)
    return "\n".join(answers) + "\n" + log.read_text(errors="replace")


def _answers(url: str, caller) -> bool:
    try:
        return fetch(url, caller)[0] == 200
    except OSError:
        return False


def _run(arguments: list[str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "mirrorline", "--log-level", "debug", *arguments],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    return result.stdout + result.stderr


def _env() -> dict[str, str]:
    return {**child_env(), "COLUMNS": "200"}


def _read_tree(root: Path) -> str:
    texts = []
    for path in sorted(root.rglob("*")):
        if path.is_file():
            texts.append(f"== {path}\n{path.read_bytes().decode(errors='replace')}")
    return "\n".join(texts)
