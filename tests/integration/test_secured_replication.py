"""Replication over SASL_SSL clusters with the authorizer on, as the replication user with
only the ACLs `mirrorline acls` documents: records, exact checkpoints, group offset sync,
topic ACL sync, a missing ACL named in the status, JKS stores, and the service (exactly-once
between clusters of three nodes)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from confluent_kafka.admin import AclOperation

from mirrorline import jvm
from mirrorline.admin_client import AdminClient
from mirrorline.devcluster import DevClusters
from support.driving import running_driver
from support.kafka_io import (
    Record,
    checkpoints_of,
    commit_offsets,
    committed_offsets,
    consume,
    create_topic,
    end_offsets,
    produce,
    topic_names,
    unique_name,
)
from support.secured import (
    PRINCIPAL,
    add_acls,
    grant_documented,
    revoke,
    secured_config,
    topic_acl,
    topic_acls,
)
from support.service import get_ok, running_service
from support.wait import wait_until

RECORDS = 2_000


def test_least_privilege_replication_checkpoints_group_sync_and_acl_sync(
    secured_clusters: DevClusters, spark, tmp_path
):
    dev = secured_clusters
    east, west = dev.client_config("east"), dev.client_config("west")
    topic, group = unique_name("orders"), unique_name("readers")
    remote = f"east.{topic}"
    config = secured_config(
        tmp_path / "secured.properties",
        dev,
        f"east->west.enabled = true\neast->west.topics = {topic}\neast->west.groups = {group}\n"
        "sync.group.offsets.enabled = true\nsync.group.offsets.interval.seconds = 1\n",
    )
    grant_documented(dev, config)
    logs = {alias: _log_size(dev, alias) for alias in ("east", "west")}
    create_topic(east, topic, 2)
    produce(east, topic, [Record(None, b"v%d" % i, partition=i % 2) for i in range(RECORDS)])
    commit_offsets(east, group, topic, {0: 300, 1: 500})
    reader, writer = "User:reader", "User:producer-app"
    add_acls(
        dev,
        "east",
        topic_acl(topic, reader, AclOperation.READ),
        topic_acl(topic, writer, AclOperation.WRITE),
    )

    with running_driver(config, spark, tmp_path / "work") as driver:
        wait_until(
            lambda: sum(end_offsets(west, remote).values()) == RECORDS,
            timeout=120,
            what=f"{RECORDS} records in {remote} on west",
        )
        wait_until(
            lambda: _translated(west, group, remote) == {0: 300, 1: 500},
            timeout=60,
            what="exact checkpoints over SASL_SSL",
        )
        wait_until(
            lambda: committed_offsets(west, group, remote, 2) == {0: 300, 1: 500},
            timeout=60,
            what="the group's offsets synced on west",
        )
        wait_until(
            lambda: (reader, "READ", "ALLOW") in topic_acls(dev, "west", remote),
            timeout=30,
            what=f"the READ ACL of {reader} copied to {remote}",
        )
        assert not any(p == writer for p, _, _ in topic_acls(dev, "west", remote))
        assert driver.statuses()[0].problems == ()
        # The documented ACLs are enough: the brokers denied the replication user nothing.
        for alias, size in logs.items():
            assert _denials(dev, alias, size) == [], f"{alias} denied requests"

        revoke(dev, "east", topic_acl(topic, reader, AclOperation.READ))
        wait_until(
            lambda: not any(p == reader for p, _, _ in topic_acls(dev, "west", remote)),
            timeout=30,
            what=f"the copy on {remote} removed with its source ACL",
        )

        # One documented ACL taken away: the status names operation, topic and cluster.
        checkpoints = "east.checkpoints.internal"
        revoke(dev, "west", topic_acl(checkpoints, PRINCIPAL, AclOperation.WRITE))
        wanted = f"west denies WRITE on topic {checkpoints} to {PRINCIPAL}"
        wait_until(
            lambda: any(wanted in p for p in driver.statuses()[0].problems),
            timeout=30,
            what=f"a problem saying {wanted!r}",
        )

    replicated = consume(west, remote, expected=RECORDS)
    assert sorted(r.value for r in replicated) == sorted(b"v%d" % i for i in range(RECORDS))


@pytest.fixture
def secured_trios(tmp_path):
    """east and west of three nodes each, secured like `secured_clusters`: transactions go
    to replicated transaction logs, records to topics with three replicas."""
    dev = DevClusters(tmp_path / "trios")
    dev.up(("east", "west"), brokers=3, die_with_parent=True, security="sasl_ssl")
    yield dev
    dev.down()


def test_exactly_once_with_jks_stores_and_the_service(secured_trios: DevClusters, spark, tmp_path):
    dev = secured_trios
    east, west = dev.client_config("east"), dev.client_config("west")
    truststore = _jks_truststore(dev.security.ca_file, tmp_path, "store-secret")
    (tmp_path / "stores.properties").write_text("truststore.password=store-secret\n")
    jks = "".join(
        f"{alias}.ssl.truststore.type = JKS\n"
        f"{alias}.ssl.truststore.location = {truststore}\n"
        f"{alias}.ssl.truststore.password = ${{file:{tmp_path / 'stores.properties'}:"
        "truststore.password}\n"
        for alias in ("east", "west")
    )
    topic = unique_name("payments")
    remote = f"east.{topic}"
    config = secured_config(
        tmp_path / "jks.properties",
        dev,
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "exactly.once.source.support = enabled\n",
        truststores=jks,
    )
    assert "ssl.truststore.location = " + str(truststore) in config.read_text()
    grant_documented(dev, config)
    create_topic(east, topic, 3, replication_factor=-1)  # three replicas, min ISR 2
    produce(east, topic, [Record(None, b"p%d" % i, partition=i % 3) for i in range(RECORDS)])

    with running_driver(config, spark, tmp_path / "work"):
        wait_until(lambda: remote in topic_names(west), timeout=60, what=f"{remote} on west")
        replicated = consume(west, remote, expected=RECORDS, timeout=120)
        with running_service(config) as service:
            flows = wait_until(
                lambda: _running(get_ok(f"{service.url}/v2/replications")),
                timeout=60,
                what="the service reporting the flow running over SASL_SSL",
            )
    assert sorted(r.value for r in replicated) == sorted(b"p%d" % i for i in range(RECORDS))
    assert [f["source"] + "->" + f["target"] for f in flows] == ["east->west"]
    copies = AdminClient(west).list_topics(remote, timeout=10).topics[remote].partitions
    assert [len(p.replicas) for p in copies.values()] == [3, 3, 3]


def _log_size(dev: DevClusters, alias: str) -> dict[int, int]:
    """The size of each node's log of cluster `alias`, by node id."""
    return {n.id: n.server_log.stat().st_size for n in dev.get(alias).nodes}


def _denials(dev: DevClusters, alias: str, since: dict[int, int]) -> list[str]:
    """Authorizer denials of the replication user logged by the nodes of `alias` after
    `since` (bytes by node id)."""
    denied = []
    for node in dev.get(alias).nodes:
        with open(node.server_log, "rb") as log:
            log.seek(since[node.id])
            text = log.read().decode(errors="replace")
        denied += [line for line in text.splitlines() if f"{PRINCIPAL} is Denied" in line]
    return denied


def _translated(west, group: str, remote: str) -> dict[int, int]:
    return {p: c.downstream_offset for p, c in checkpoints_of(west, "east", group, remote).items()}


def _running(answer: dict) -> list[dict]:
    flows = [r for r in answer["replications"] if r["state"] == "running"]
    return flows


def _jks_truststore(ca_file: Path, directory: Path, password: str) -> Path:
    keytool = str(Path(jvm.java_executable()).with_name("keytool"))
    store = directory / "truststore.jks"
    subprocess.run(
        [
            keytool,
            "-importcert",
            "-noprompt",
            "-alias",
            "dev-ca",
            "-file",
            str(ca_file),
            "-keystore",
            str(store),
            "-storetype",
            "JKS",
            "-storepass:env",
            "STOREPASS",
        ],
        check=True,
        capture_output=True,
        env={"STOREPASS": password},
    )
    return store
