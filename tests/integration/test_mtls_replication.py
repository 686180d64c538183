"""Replication between mutual-TLS clusters (`dev up --security mtls`): the replication user logs
in with its PKCS12 keystore only (the properties file the dev clusters write), holds only the
ACLs `mirrorline acls` documents, and one driver run copies a topic, judged by `mirrorline
verify` and shown by `mirrorline status`, and a group's checkpoints. A client without a
certificate is refused."""

from __future__ import annotations

import json
import threading

import pytest
from typer.testing import CliRunner

from mirrorline.admin_client import AdminClient
from mirrorline.cli.main import app
from mirrorline.devcluster import DevClusters
from support.driving import running_driver
from support.kafka_io import (
    Record,
    checkpoints_of,
    commit_offsets,
    create_topic,
    end_offsets,
    produce,
    unique_name,
)
from support.secured import grant_documented, secured_config
from support.wait import wait_until

RECORDS = 400


@pytest.fixture
def mtls_clusters(tmp_path):
    dev = DevClusters(tmp_path / "mtls")
    dev.up(("east", "west"), die_with_parent=True, security="mtls")
    yield dev
    dev.down()


def test_replication_between_mtls_clusters_with_keystores_and_documented_acls(
    mtls_clusters: DevClusters, spark, tmp_path
):
    dev = mtls_clusters
    east, west = dev.client_config("east"), dev.client_config("west")
    _refuses_a_client_without_certificate(dev, "east")
    topic, group = unique_name("ledger"), unique_name("auditors")
    remote = f"east.{topic}"
    config = secured_config(
        tmp_path / "mtls.properties",
        dev,
        f"east->west.enabled = true\neast->west.topics = {topic}\neast->west.groups = {group}\n",
    )
    text = config.read_text()
    assert "east.ssl.keystore.type = PKCS12" in text and "sasl" not in text
    assert dev.security.keystore_password("mirrorline") not in text
    grant_documented(dev, config)
    create_topic(east, topic, 2)
    produce(east, topic, [Record(b"k%d" % i, b"v%d" % i, partition=i % 2) for i in range(RECORDS)])
    commit_offsets(east, group, topic, {0: 120, 1: 80})

    with running_driver(config, spark, tmp_path / "work") as driver:
        wait_until(
            lambda: (
                sum(end_offsets(west, remote).values()) == RECORDS
                or driver.statuses()[0].state == "failed"
            ),
            timeout=120,
            what=f"{RECORDS} records in {remote} on west",
        )
        assert driver.statuses()[0].state == "running", driver.statuses()[0].reason
        wait_until(
            lambda: _translated(west, group, remote) == {0: 120, 1: 80},
            timeout=60,
            what="exact checkpoints between mtls clusters",
        )

        def verified() -> dict:
            done = CliRunner().invoke(
                app,
                ["verify", "-c", str(config), "-s", "east", "-t", "west", "--topics", topic]
                + ["--json"],
            )
            assert done.exit_code == 0, done.output
            assert dev.security.keystore_password("mirrorline") not in done.output
            print(done.output)  # shown if the wait below fails
            return json.loads(done.output)

        # Verified up to the saved progress, which follows the copy by a batch.
        report = wait_until(
            lambda: (r := verified())["totals"]["checked"] == RECORDS and r,
            timeout=60,
            what="every record verified",
        )
        assert report["verdict"] == "identical", report
        assert driver.statuses()[0].problems == ()

        # `status` reads the verification back, as the service does, over mTLS too.
        shown = CliRunner().invoke(app, ["status", "-c", str(config), "--json"])
        assert shown.exit_code == 0, shown.output
        (flow,) = json.loads(shown.output)["flows"]
        last = flow["last_verification"]
        assert (last["verdict"], last["checked"], last["differences"]) == ("identical", RECORDS, 0)
        assert last["topics"] == topic and last["finished_ms"] == report["finished_ms"]


def _refuses_a_client_without_certificate(dev: DevClusters, alias: str) -> None:
    """A client trusting the CA but presenting no certificate fails its TLS handshake."""
    errors: list[str] = []
    lock = threading.Lock()

    def record(error) -> None:
        with lock:
            errors.append(error.str())

    anonymous = {
        "bootstrap.servers": dev.get(alias).bootstrap_servers,
        "security.protocol": "SSL",
        "ssl.ca.location": str(dev.security.ca_file),
        "error_cb": record,
        "log_level": 0,
    }
    client = AdminClient(anonymous)
    wait_until(
        lambda: (client.poll(0.2), errors)[1],
        timeout=20,
        what="the broker refusing a client without a certificate",
    )
    assert any("certificate" in e or "SSL" in e for e in errors), errors
    with pytest.raises(Exception, match="(?i)timed out|transport|ssl"):
        client.list_topics(timeout=2)


def _translated(west, group: str, remote: str) -> dict[int, int]:
    return {p: c.downstream_offset for p, c in checkpoints_of(west, "east", group, remote).items()}
