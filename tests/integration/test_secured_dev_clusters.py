"""`mirrorline dev up --security sasl_ssl`: brokers that take SASL_SSL logins only and refuse
what no ACL allows, and the admin client configuration `--json` hands to scripts."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.devcluster import DevClusters
from mirrorline.kafka import KafkaOperationError
from support.kafka_io import Record, consume, create_topic, produce, unique_name


def test_dev_up_sasl_ssl_gives_scripts_an_admin_login_and_refuses_the_rest(tmp_path):
    directory = tmp_path / "dev"
    result = CliRunner().invoke(
        app,
        ["dev", "up", "--clusters", "solo", "--security", "sasl_ssl", "--dir", str(directory)]
        + ["--json"],
    )
    try:
        assert result.exit_code == 0, result.output
        cluster = json.loads(result.output)["clusters"][0]
        assert cluster["security"] == "sasl_ssl"
        # Described as `dev status --json` describes it, nodes included.
        assert [(n["id"], n["state"]) for n in cluster["nodes"]] == [(1, "up")]
        admin = cluster["client"]
        assert cluster["up"] is True and cluster["bootstrap_servers"] == admin["bootstrap.servers"]
        assert admin["security.protocol"] == "SASL_SSL" and admin["sasl.username"] == "admin"

        topic = unique_name("scripted")
        create_topic(admin, topic, 1)
        produce(admin, topic, [Record(b"k", b"v")])
        assert [r.value for r in consume(admin, topic, expected=1)] == [b"v"]

        dev = DevClusters(directory)
        properties = dev.properties_file.read_text()
        replicator = dev.security.password("mirrorline")
        assert "solo.security.protocol = SASL_SSL" in properties
        assert replicator not in properties  # read through ${file:...}
        # The replication user has no ACL yet: the authorizer refuses it.
        with pytest.raises(KafkaOperationError, match="uthoriz"):
            create_topic(dev.client_config("solo", user="mirrorline"), unique_name("nope"), 1)
        # A wrong password gets no answer but an authentication error.
        wrong = {**admin, "sasl.password": "not-the-password"}
        with pytest.raises(KafkaOperationError):
            create_topic(wrong, unique_name("nope"), 1, timeout=10)
    finally:
        CliRunner().invoke(app, ["dev", "down", "--dir", str(directory)])
