"""Malformed configurations: one clear message each, naming the key and the line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config.errors import ConfigError
from mirrorline.config.loader import load_config

BASE = """\
clusters = A, B, C
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""
BASE_LINES = BASE.count("\n")


@dataclass(frozen=True)
class Case:
    id: str
    body: str
    key: str | None
    fragment: str
    full: bool = False  # body replaces BASE instead of being appended
    line: int | None = -1  # -1: the last line of the body

    def text(self) -> str:
        return self.body if self.full else BASE + self.body

    def expected_line(self) -> int | None:
        if self.line != -1:
            return self.line
        return self.text().rstrip("\n").count("\n") + 1


CASES = [
    Case("unknown target alias", "A->D.enabled = true\n", "A->D.enabled", "'D' is not a cluster"),
    Case("unknown source alias", "D->A.topics = x\n", "D->A.topics", "'D' is not a cluster alias"),
    Case("self flow", "A->A.enabled = true\n", "A->A.enabled", "from A to itself"),
    Case("flow without a setting", "A->B = true\n", "A->B", "setting name is missing"),
    Case("malformed flow key", "A-B.enabled = true\n", "A-B.enabled", "'A-B' is not a cluster"),
    Case("bad regex", "A->B.topics = orders, pay[ments\n", "A->B.topics", "not a valid regular"),
    Case(
        "negative interval",
        "emit.checkpoints.interval.seconds = -5\n",
        "emit.checkpoints.interval.seconds",
        "positive number of seconds",
    ),
    Case(
        "non-numeric interval",
        "A->B.refresh.topics.interval.seconds = often\n",
        "A->B.refresh.topics.interval.seconds",
        "expected a whole number",
    ),
    Case("zero tasks", "tasks.max = 0\n", "tasks.max", "at least 1"),
    Case("negative lag", "offset.lag.max = -1\n", "offset.lag.max", "at least 0"),
    Case("bad replication factor", "replication.factor = 0\n", "replication.factor", "-1"),
    Case(
        "missing bootstrap servers",
        "A->C.enabled = true\n",
        "C.bootstrap.servers",
        "cluster C has no bootstrap servers",
    ),
    Case(
        "unknown policy class",
        "replication.policy.class = com.example.NoSuchPolicy\n",
        "replication.policy.class",
        "unknown replication policy",
    ),
    Case(
        "bad separator",
        "replication.policy.separator = /\n",
        "replication.policy.separator",
        "characters allowed in topic names",
    ),
    Case(
        "file provider pointing nowhere",
        "A.ssl.truststore.password = ${file:/nonexistent/secrets.properties:pw}\n",
        "A.ssl.truststore.password",
        "cannot read properties file",
    ),
    Case(
        "env var unset",
        "A.sasl.jaas.config = ${env:MIRRORLINE_TEST_UNSET_VARIABLE}\n",
        "A.sasl.jaas.config",
        "MIRRORLINE_TEST_UNSET_VARIABLE is not set",
    ),
    Case(
        "unknown provider",
        "A.sasl.jaas.config = ${vault:kv/kafka:password}\n",
        "A.sasl.jaas.config",
        "unknown config provider 'vault'",
    ),
    Case("duplicate alias", "clusters = A, B, A\n", "clusters", "listed twice", full=True),
    Case("empty clusters", "clusters =\nA.bootstrap.servers = a:1\n", "clusters", "empty", True, 1),
    Case("reserved alias", "clusters = A, workers\n", "clusters", "reserved prefix", full=True),
    Case("alias with a space", "clusters = A, us west\n", "clusters", "not allowed", full=True),
    Case("missing clusters", "A.bootstrap.servers = a:1\n", "clusters", "not set", True, None),
    Case(
        "bad boolean",
        "A->B.emit.checkpoints.enabled = yes\n",
        "A->B.emit.checkpoints.enabled",
        "true or false",
    ),
    Case(
        "bad offset-syncs location",
        "offset-syncs.topic.location = middle\n",
        "offset-syncs.topic.location",
        "expected one of source, target",
    ),
    Case(
        "bad exactly-once",
        "B.exactly.once.source.support = required\n",
        "B.exactly.once.source.support",
        "expected one of disabled, enabled, preparing",
    ),
    Case(
        "bad isolation level",
        "consumer.isolation.level = dirty_read\n",
        "consumer.isolation.level",
        "read_committed",
    ),
    Case(
        "untranslatable JAAS module",
        'A.sasl.jaas.config = com.example.TokenLoginModule required token="t0k3n";\n',
        "A.sasl.jaas.config",
        "has no librdkafka equivalent",
    ),
    Case(
        "JAAS module and mechanism disagree",
        "A.security.protocol = SASL_SSL\n"
        "A.sasl.mechanism = SCRAM-SHA-256\n"
        "A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="u" password="p";\n',
        "A.sasl.jaas.config",
        "needs sasl.mechanism=PLAIN",
    ),
    Case(
        "missing JKS truststore",
        "A.security.protocol = SSL\nA.ssl.truststore.location = /etc/kafka/truststore.jks\n",
        "A.ssl.truststore.location",
        "JKS truststore /etc/kafka/truststore.jks does not exist",
    ),
    Case(
        "bad start position",
        "A->B.start.position = yesterday\n",
        "A->B.start.position",
        "ISO-8601",
    ),
    Case(
        "unknown client setting",
        "A->B.consumer.fetch.min.bites = 1\n",
        "A->B.consumer.fetch.min.bites",
        "unknown Kafka client setting 'fetch.min.bites'",
    ),
    Case(
        "unknown ssl setting",
        "A.ssl.trustore.location = /x.pem\n",
        "A.ssl.trustore.location",
        "unknown Kafka client setting",
    ),
    Case(
        "refused client setting",
        "producer.interceptor.classes = com.example.Audit\n",
        "producer.interceptor.classes",
        "cannot be used with librdkafka",
    ),
    Case(
        "client setting at flow level without a side",
        "A->B.linger.ms = 5\n",
        "A->B.linger.ms",
        "must say which clients",
    ),
    Case(
        "consumer.override prefix",
        "consumer.override.fetch.min.bytes = 1\n",
        "consumer.override.fetch.min.bytes",
        "sink connectors",
    ),
    Case(
        "side prefix at cluster level",
        "A.source.consumer.fetch.min.bytes = 1\n",
        "A.source.consumer.fetch.min.bytes",
        "do not apply to a single cluster",
    ),
    Case(
        "unsupported SASL mechanism",
        "A.sasl.mechanism = AWS_MSK_IAM\n",
        "A.sasl.mechanism",
        "expected one of GSSAPI",
    ),
    Case("empty bootstrap servers", "A.bootstrap.servers =\n", "A.bootstrap.servers", "no servers"),
    Case("bad errors.tolerance", "errors.tolerance = some\n", "errors.tolerance", "none, all"),
    Case(
        "bad dead letter topic",
        "errors.deadletterqueue.topic.name = failed records\n",
        "errors.deadletterqueue.topic.name",
        "a topic name",
    ),
    Case(
        "custom topic filter in no jar",
        "topic.filter.class = com.example.MyFilter\n",
        "topic.filter.class",
        "com.example.MyFilter is in no jar of plugin.path (plugin.path is not set)",
    ),
    Case(
        "forwarding admin class",
        "A->B.forwarding.admin.class = com.example.CentralAdmin\n",
        "A->B.forwarding.admin.class",
        "MirrorMaker 2 would create and configure remote topics",
    ),
    Case("malformed escape", "A->B.topics = orders\\u12\n", "A->B.topics", "malformed \\uXXXX"),
    Case(
        "real-time mode with exactly-once",
        "A->B.exactly.once.source.support = enabled\nA->B.data.path.mode = real-time\n",
        "A->B.data.path.mode",
        "cannot be combined with exactly-once",
    ),
    Case(
        "real-time batch below Spark's minimum",
        "real-time.batch.ms = 1000\n",
        "real-time.batch.ms",
        "at least 5000",
    ),
]


def test_there_are_at_least_25_cases() -> None:
    assert len(CASES) >= 25
    assert len({c.id for c in CASES}) == len(CASES)


def _write(tmp_path: Path, case: Case) -> Path:
    path = tmp_path / "bad.properties"
    path.write_text(case.text(), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_one_clear_error_with_key_and_line(tmp_path: Path, case: Case) -> None:
    path = _write(tmp_path, case)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    issues = caught.value.issues
    assert len(issues) == 1, [str(i) for i in issues]
    issue = issues[0]
    assert issue.setting == case.key
    assert issue.origin is not None and issue.origin.file == str(path)
    assert issue.origin.line == case.expected_line()
    assert case.fragment in f"{issue.message} {issue.hint}"
    rendered = str(issue)
    assert case.key in rendered
    if case.expected_line() is not None:
        assert rendered.startswith(f"{path}:{case.expected_line()}: ")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_config_check_exits_2_without_a_traceback(tmp_path: Path, case: Case) -> None:
    path = _write(tmp_path, case)
    result = CliRunner().invoke(app, ["config", "check", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "1 error" in result.output
    assert case.key in result.output


def test_several_errors_are_reported_at_once(tmp_path: Path) -> None:
    text = BASE + (
        "A->D.enabled = true\n"  # line 5
        "A->B.topics = orders[\n"  # line 6
        "emit.heartbeats.interval.seconds = 0\n"  # line 7
        "A.ssl.truststore.location = /etc/ts.jks\n"  # line 8
        "A->B.start.position = someday\n"  # line 9
        "B.sasl.jaas.config = ${env:MIRRORLINE_TEST_UNSET_VARIABLE}\n"  # line 10
        "A.security.protocol = SSL\n"  # line 11, fine
    )
    path = tmp_path / "many.properties"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    lines = sorted(i.origin.line for i in caught.value.issues if i.origin is not None)
    assert lines == [5, 6, 7, 8, 9, 10]
    result = CliRunner().invoke(app, ["config", "check", str(path)])
    assert result.exit_code == 2
    assert "6 errors" in result.output
    for line in range(5, 11):
        assert f"{path}:{line}:" in result.output


def test_errors_as_json(tmp_path: Path) -> None:
    import json

    path = tmp_path / "bad.properties"
    path.write_text(BASE + "A->B.topics = orders[\ntasks.max = x\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["config", "check", "--json", str(path)])
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    assert document["ok"] is False
    assert [(e["key"], e["line"]) for e in document["errors"]] == [
        ("A->B.topics", 5),
        ("tasks.max", 6),
    ]
    assert all(e["severity"] == "error" and e["message"] for e in document["errors"])


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["config", "check", str(tmp_path / "nope.properties")])
    assert result.exit_code == 2
    assert "cannot read the configuration file" in result.output
    assert "Traceback" not in result.output


def test_a_malformed_line_does_not_hide_the_other_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.properties"
    path.write_text(BASE + "A->B.topics = x\\u00\nA->Z.enabled = true\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert [(i.setting, i.origin.line) for i in caught.value.issues if i.origin] == [
        ("A->B.topics", 5),
        ("A->Z.enabled", 6),
    ]
