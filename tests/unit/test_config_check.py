"""`mirrorline config check` on the example a user would write."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config.loader import load_config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "three-clusters.properties"
PASSWORD = "example-Eu-Centr4l-password"  # in examples/secrets/eu-central.properties


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def run_or_show_stacks(args: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """`args` run to the end; one still running after `timeout` fails the test with
    every Python thread's stack (faulthandler, on SIGABRT) and is gone."""
    process = subprocess.Popen(
        [args[0], "-X", "faulthandler", *args[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        try:
            stdout, stderr = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
        pytest.fail(f"{args[1:]} still ran after {timeout:.0f} s:\n{stdout}\n{stderr}")
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def check(runner: CliRunner, *args: str) -> tuple[int, str]:
    # The example's clusters do not exist: their run-time changes are not asked for.
    result = runner.invoke(app, ["config", "check", "--offline", *args, str(EXAMPLE)])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_example_loads_with_the_expected_effective_values() -> None:
    config = load_config(EXAMPLE, environ={})
    assert list(config.clusters) == ["us-west", "us-east", "eu-central"]
    assert [f.name for f in config.enabled_flows()] == ["us-west->us-east", "us-west->eu-central"]
    dr = config.flow("us-west", "us-east")
    assert dr.topic_filter.matches("orders-2024") and not dr.topic_filter.matches("clickstream")
    assert dr.value("sync.group.offsets.enabled") is True
    assert dr.value("tasks.max") == 4
    assert dr.value("max.poll.records") == 500
    analytics = config.flow("us-west", "eu-central")
    assert analytics.value("max.poll.records") == 2000
    assert analytics.start_position.kind == "latest"
    assert analytics.group_filter.matches("analytics-daily")
    assert not analytics.group_filter.matches("billing")
    producer = analytics.client_settings("target", "producer")
    assert producer["compression.type"] == "zstd"
    assert producer["security.protocol"] == "SASL_SSL"
    assert producer["sasl.mechanisms"] == "SCRAM-SHA-512"
    assert producer["sasl.username"] == "mirrorline"
    assert producer["sasl.password"] == PASSWORD
    assert producer["ssl.ca.location"] == "/etc/mirrorline/eu-central-ca.pem"
    source = analytics.client_settings("source", "consumer")
    assert source["fetch.min.bytes"] == "1048576"
    assert "fetch.min.bytes" not in analytics.client_settings("target", "consumer")
    assert "sasl.username" not in source
    assert config.warnings == ()


def test_config_check_summarizes_clusters_and_flows(runner: CliRunner) -> None:
    code, output = check(runner)
    assert code == 0
    assert "3 clusters, 2 of 6 flows enabled, no warnings" in output
    lines = [line.rstrip() for line in output.splitlines()]
    assert "  eu-central  eu-kafka-1:9093,eu-kafka-2:9093 (SASL_SSL)" in lines
    dr = lines[lines.index("Flow us-west->us-east (enabled)") + 1 :]
    assert dr[:10] == [
        "  topics          orders.*, payments, customers",
        "  topics.exclude  .*[\\-\\.]internal, .*\\.replica, __.* (default)",
        "  groups          .* (default)",
        "  groups.exclude  console-consumer-.*, connect-.*, __.* (default)",
        "  policy          DefaultReplicationPolicy (orders → us-west.orders)",
        "  mode            at-least-once",
        "  data path       micro-batch (batches of about 5 s on a backlog), at most 4 tasks",
        "  control loops   refresh.topics 300 s, refresh.groups 600 s, sync.topic.configs 600 s, "
        "sync.topic.acls 600 s, emit.checkpoints 30 s, emit.heartbeats 1 s, emit.metrics 5 s, "
        "sync.group.offsets 60 s",
        "  run time        not read (--offline)",
        "",
    ]
    analytics = lines[lines.index("Flow us-west->eu-central (enabled)") + 1 :]
    assert "                  off: sync.group.offsets" in analytics
    assert "Not enabled: us-east->us-west, us-east->eu-central, eu-central->us-west, " in output
    # The per-setting tables only on request.
    assert "three-clusters.properties:30" not in output
    assert "Every setting and where it comes from: --settings" in output
    assert len(lines) < 50


def test_settings_shows_flows_values_and_origins(runner: CliRunner) -> None:
    code, output = check(runner, "--settings")
    assert code == 0
    assert "3 clusters, 2 of 6 flows enabled" in output
    assert "Flow us-west->us-east (enabled)" in output
    assert "Flow us-west->eu-central (enabled)" in output
    assert "Not enabled: us-east->us-west" in output
    assert "orders.*, payments, customers" in output
    assert "three-clusters.properties:30 us-west->us-east.topics" in output
    assert "three-clusters.properties:37 us-west->eu-central.consumer.max.poll.records" in output
    assert "SCRAM-SHA-512" in output
    assert "set by Mirrorline" in output
    assert "default" in output


def test_config_check_redacts_secrets(runner: CliRunner) -> None:
    code, output = check(runner, "--settings", "--all")
    assert code == 0
    assert "[hidden]" in output
    assert PASSWORD not in output
    assert "ScramLoginModule" not in output


def test_config_check_json_is_stable_and_redacted(runner: CliRunner) -> None:
    code, output = check(runner, "--json")
    assert code == 0
    assert PASSWORD not in output
    document = json.loads(output)
    assert document["ok"] is True
    assert list(document) == ["ok", "file", "clusters", "flows", "service", "warnings"]
    flows = {f["name"]: f for f in document["flows"]}
    analytics = flows["us-west->eu-central"]
    assert analytics["enabled"] is True
    assert analytics["settings"]["max.poll.records"] == {
        "value": 2000,
        "origin": f"{EXAMPLE}:37",
        "key": "us-west->eu-central.consumer.max.poll.records",
    }
    assert analytics["settings"]["topics"]["value"] == ["orders.*", "clickstream.*"]
    producer = analytics["clients"]["target.producer"]
    assert producer["sasl.password"]["value"] == "[hidden]"
    assert producer["sasl.mechanisms"]["value"] == "SCRAM-SHA-512"
    assert flows["us-east->us-west"]["enabled"] is False
    # Run-time changes: not asked for with --offline, never for flows not enabled.
    assert analytics["runtime"] is None
    assert analytics["runtime_note"] == "not read (--offline)"
    assert flows["us-east->us-west"]["runtime"] is None
    assert flows["us-east->us-west"]["runtime_note"] == "not read: the flow is not enabled"
    again = check(runner, "--json")[1]
    assert again == output


def test_all_shows_disabled_flows(runner: CliRunner) -> None:
    code, output = check(runner, "--all")
    assert code == 0
    assert "Flow eu-central->us-east (not enabled)" in output
    assert "Not enabled:" not in output


def test_clusters_that_do_not_answer_are_named_and_the_check_passes(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "down.properties"
    path.write_text(
        "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n"
        "A->B.enabled = true\nB->A.enabled = true\n",
        encoding="utf-8",
    )
    # A process of its own: librdkafka would log to the real stderr.
    done = run_or_show_stacks(
        [sys.executable, "-m", "mirrorline", "config", "check", "--timeout", "1", str(path)]
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  run time        run-time changes unknown: B did not answer" in done.stdout
    assert "  run time        run-time changes unknown: A did not answer" in done.stdout
    assert done.stderr == ""  # no log line of librdkafka's

    # Timed in this process, where no interpreter start-up adds to it: about twice
    # --timeout (2 s), where the default timeout would take about 10.
    started = time.monotonic()
    result = runner.invoke(app, ["config", "check", "--json", "--timeout", "1", str(path)])
    assert time.monotonic() - started < 8
    assert result.exit_code == 0, result.output
    flows = {f["name"]: f for f in json.loads(result.output)["flows"]}
    assert flows["A->B"]["runtime"] is None
    assert flows["A->B"]["runtime_note"] == "B did not answer"


def test_warnings_are_shown_and_do_not_fail(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "warn.properties"
    path.write_text(
        "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n"
        "A->B.enabled = true\nconfig.storage.topic = mm2-configs\nproducer.key.serializer = x\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["config", "check", "--offline", str(path)])
    assert result.exit_code == 0
    assert "1 of 2 flows enabled, 2 warnings" in result.output
    assert "Warnings (2)" in result.output
    assert f"{path}:5: config.storage.topic: ignored" in result.output
    assert f"{path}:6: producer.key.serializer: ignored" in result.output


def test_all_explains_flows_whose_clients_cannot_be_used(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text(
        "clusters = A, B, C\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n"
        "A->B.enabled = true\nC.ssl.truststore.location = /etc/c.jks\nC.security.protocol = SSL\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["config", "check", "--offline", "--all", str(path)])
    assert result.exit_code == 0, result.output
    assert "Clients of A->C cannot be used:" in result.output
    assert f"{path}:5: C.ssl.truststore.location: JKS truststore /etc/c.jks" in result.output
    assert "  C  no bootstrap servers" in result.output
