"""`mirrorline doctor`'s pure logic: librdkafka's reports sorted into causes with their fixes,
missing ACLs as grant commands, the jar cache judged, findings rendered, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline import jar_fetch
from mirrorline.cli.doctor_cmd import document, lines, summary
from mirrorline.cli.main import app
from mirrorline.config import parse_config
from mirrorline.doctor import Finding, check_jar_sets, check_pyspark, exit_code, split_fix
from mirrorline.doctor_clusters import acl_problems, cause_of, connection_problem, reported
from mirrorline.engine.access import Denied
from mirrorline.permissions import merged, required_grants

# What librdkafka 2.x reports (error_cb) for each way a connection fails, as seen on dev clusters.
AUTH = (
    "_AUTHENTICATION",
    "sasl_ssl://127.0.0.1:58207/bootstrap: SASL authentication error: Authentication failed "
    "during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 "
    "(after 306ms in state AUTH_REQ)",
)
TLS = (
    "_SSL",
    "sasl_ssl://127.0.0.1:58207/bootstrap: SSL handshake failed: error:0A000086:SSL routines::"
    "certificate verify failed: broker certificate could not be verified, verify that "
    "ssl.ca.location is correctly configured or root CA certificates are installed "
    "(install ca-certificates package) (after 12ms in state SSL_HANDSHAKE)",
)
REFUSED = (
    "_TRANSPORT",
    "sasl_ssl://127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused "
    "(after 0ms in state CONNECT)",
)
UNRESOLVED = (
    "_RESOLVE",
    "kafka.invalid:9092/bootstrap: Failed to resolve 'kafka.invalid:9092': Name or service not "
    "known (after 1ms in state CONNECT)",
)
ALL_DOWN = ("_ALL_BROKERS_DOWN", "1/1 brokers are down")
# No report at all: librdkafka refused to create the client (what `ClusterAccess` then says).
NO_CA_FILE = (
    None,
    "Failed to create admin client: ssl.ca.location failed: "
    "error:05880020:x509 certificate routines::BIO lib",
)

PASSWORD = "S3cret-Pa55"
SECURED = f"""clusters = east, west
east.bootstrap.servers = 127.0.0.1:58207
west.bootstrap.servers = ${{env:WEST_SERVERS}}
security.protocol = SASL_SSL
sasl.mechanism = SCRAM-SHA-512
sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="mirrorline" password="{PASSWORD}";
east.ssl.truststore.type = PEM
east.ssl.truststore.location = /etc/kafka/ca.pem
east->west.enabled = true
east->west.topics = orders, pay.*
"""


def secured():
    return parse_config(SECURED, source="mm2.properties", environ={"WEST_SERVERS": "10.0.0.9:9093"})


def admin(alias: str):
    flow = secured().enabled_flows()[0]
    return flow.client_settings("source" if alias == "east" else "target", "admin")


@pytest.mark.parametrize(
    ("report", "cause"),
    [
        (AUTH, "authentication"),
        (TLS, "tls"),
        (REFUSED, "unreachable"),
        (UNRESOLVED, "unreachable"),
        (ALL_DOWN, "unreachable"),
        (NO_CA_FILE, "settings"),
        (("_INVALID_ARG", 'Invalid value "x" for configuration property "y"'), "settings"),
        ((None, "SASL authentication error: Authentication failed"), "authentication"),
        ((None, "SSL handshake failed: certificate verify failed"), "tls"),
        ((None, ""), "unreachable"),
    ],
)
def test_librdkafka_reports_are_sorted_into_causes(report, cause):
    assert cause_of(*report) == cause


def test_a_report_loses_its_broker_prefix_and_timing():
    assert reported(REFUSED[1]) == "Connect to ipv4#127.0.0.1:1 failed: Connection refused"


def test_wrong_credentials_name_the_user_and_where_the_password_is_set_never_the_password():
    finding = connection_problem("east", "127.0.0.1:58207", admin("east"), AUTH, 10)
    assert finding.check == "cluster east" and not finding.ok and finding.fails
    assert finding.detail == "east: authentication failed for mirrorline"
    assert finding.fix.startswith("check sasl.jaas.config / the password in mm2.properties:6")
    assert "sasl.jaas.config" in finding.fix
    assert PASSWORD not in json.dumps(document([finding])) + "\n".join(lines([finding]))


def test_an_untrusted_certificate_points_at_the_truststore():
    finding = connection_problem("east", "127.0.0.1:58207", admin("east"), TLS, 10)
    assert (
        finding.detail
        == "east: TLS with 127.0.0.1:58207 failed: the brokers' certificate is not trusted"
    )
    assert "east.ssl.truststore.location" in finding.fix and "ssl.ca.location" in finding.fix
    assert "mm2.properties:9 (east.ssl.truststore.location)" in finding.fix


def test_an_unreadable_ca_file_names_the_setting_that_points_at_it():
    finding = connection_problem("east", "127.0.0.1:58207", admin("east"), NO_CA_FILE, 10)
    assert finding.detail == "east: the file of ssl.ca.location cannot be read"
    assert finding.fix == (
        "correct the path set at mm2.properties:9 (east.ssl.truststore.location), "
        "or the file's permissions"
    )


def test_settings_librdkafka_refuses_are_named_without_their_values():
    report = ("_INVALID_ARG", f'Invalid value "{PASSWORD}" for configuration property "z"')
    finding = connection_problem("east", "127.0.0.1:58207", admin("east"), report, 10)
    assert finding.detail == (
        'east: librdkafka refuses the client settings: Invalid value for configuration property "z"'
    )
    assert "mirrorline config check" in finding.fix


def test_no_answer_names_servers_timeout_and_what_to_check():
    finding = connection_problem("east", "127.0.0.1:1", admin("east"), REFUSED, 5)
    assert finding.detail == (
        "east: no broker answers at 127.0.0.1:1 within 5s "
        "(Connect to ipv4#127.0.0.1:1 failed: Connection refused)"
    )
    assert finding.fix.startswith(
        "check east.bootstrap.servers, the network, and that the brokers run"
    )
    assert "SASL_SSL listener" in finding.fix
    quiet = connection_problem("east", "127.0.0.1:1", admin("east"), None, 2.5)
    assert quiet.detail == "east: no broker answers at 127.0.0.1:1 within 2.5s"


def test_hidden_bootstrap_servers_stay_hidden_with_librdkafka_reports():
    finding = connection_problem("west", "[hidden]", admin("west"), REFUSED, 5)
    text = "\n".join(lines([finding])) + json.dumps(document([finding]))
    assert "west: no broker answers at [hidden] within 5s" in text
    assert "127.0.0.1" not in text and "10.0.0.9" not in text


def test_each_denied_grant_is_one_problem_with_its_kafka_acls_command():
    flow = secured().enabled_flows()[0]
    grants = [g for g in merged(required_grants(flow)) if g.cluster == "east"]
    denied = [
        Denied("east", "orders", ("READ",), "read topics", "User:mirrorline"),
        Denied("east", "pay.eu", ("READ", "DESCRIBE"), "read topics", "User:mirrorline"),
        Denied("east", "pay.us", ("READ", "DESCRIBE"), "read topics", "User:mirrorline"),
    ]
    problems = acl_problems("east", denied, grants, "User:mirrorline")
    assert [p.detail for p in problems] == [
        "east denies READ on topic orders to User:mirrorline (needed for: read topics)",
        "east denies READ, DESCRIBE on topics prefixed pay to User:mirrorline "
        "(needed for: read topics; seen on pay.eu, pay.us)",
    ]
    assert problems[0].check == "acls east"
    assert problems[0].fix == (
        "kafka-acls.sh --bootstrap-server <east> --command-config <admin.properties> --add "
        "--allow-principal User:mirrorline --operation Read --topic 'orders'"
    )
    assert (
        "--operation Read --operation Describe --topic 'pay' --resource-pattern-type prefixed"
        in (problems[1].fix)
    )


def test_a_principal_unknown_to_the_settings_is_a_placeholder_in_the_command():
    plain = "clusters = east, west\neast.bootstrap.servers = h:1\nwest.bootstrap.servers = h:2\n"
    flow = parse_config(plain + "east->west.enabled = true\n").enabled_flows()[0]
    grants = required_grants(flow)
    denied = [Denied("east", "mm2-offset-syncs.west.internal", ("READ",), "offset syncs", "-")]
    (problem,) = acl_problems("east", denied, grants, "")
    assert "to the configured principal" in problem.detail
    assert "--allow-principal User:<name>" in problem.fix


def test_a_missing_jar_cache_asks_for_setup_and_the_broker_jars_only_warn(tmp_path: Path):
    spark_kafka, kafka = check_jar_sets(tmp_path)
    assert spark_kafka.fails and "mirrorline setup" in spark_kafka.fix
    assert str(tmp_path) in spark_kafka.fix and "MIRRORLINE_JVM_LIB" in spark_kafka.fix
    assert spark_kafka.detail.startswith("jars spark-kafka: Spark's Kafka connector")
    assert not kafka.ok and kafka.severity == "warning" and not kafka.fails
    assert exit_code([kafka]) == 0 and exit_code([spark_kafka, kafka]) == 1


def test_a_complete_jar_set_is_ok(tmp_path: Path):
    fill(tmp_path, "kafka", "kafka_2.13-4.3.1.jar")
    findings = {f.check: f for f in check_jar_sets(tmp_path)}
    assert findings["jars kafka"].ok
    assert findings["jars kafka"].detail == f"1 jars in {tmp_path / 'kafka'}"


def test_pyspark_and_the_connector_in_the_cache_must_be_one_release(tmp_path: Path):
    assert check_pyspark(tmp_path, "4.2.0", "4.2.0") == []  # nothing there: the jar check says so
    fill(tmp_path, "spark-kafka", "spark-sql-kafka-0-10_2.13-4.1.1.jar", resolved="old\n")
    (mismatch,) = check_pyspark(tmp_path, "4.2.0", "4.2.0")
    assert mismatch.fails
    assert "PySpark is 4.2.0" in mismatch.detail and "connector 4.1.1" in mismatch.detail
    assert "mirrorline setup" in mismatch.fix
    # The set is then left to this check: one problem, not two.
    assert [f.check for f in check_jar_sets(tmp_path)] == ["jars kafka"]
    (tmp_path / "spark-kafka" / "spark-sql-kafka-0-10_2.13-4.2.0.jar").write_bytes(b"")
    (ok,) = check_pyspark(tmp_path, "4.2.0", "4.2.0")
    assert ok.ok and ok.detail == "4.2.0, Spark's Kafka connector 4.2.0"
    (other,) = check_pyspark(tmp_path, "4.2.0", "4.1.1")
    assert other.fails and "4.2.0" in other.detail and "4.1.1" in other.detail


def test_a_set_fetched_complete_but_without_its_connector_is_a_problem(tmp_path: Path):
    fill(tmp_path, "spark-kafka", "kafka-clients-3.9.2.jar")
    version = jar_fetch.jar_set("spark-kafka").coordinates[0].rsplit(":", 1)[1]
    (missing,) = check_pyspark(tmp_path, version, version)
    assert missing.fails and f"spark-sql-kafka-0-10_2.13-{version}.jar" in missing.detail


def test_a_jvm_setup_message_splits_into_cause_and_fix():
    assert split_fix(
        "Java 17+ not found (no `java` on PATH): install OpenJDK 17 or newer (Debian: apt) "
        "or set JAVA_HOME"
    ) == (
        "Java 17+ not found (no `java` on PATH)",
        "install OpenJDK 17 or newer (Debian: apt) or set JAVA_HOME",
    )
    assert split_fix("/opt/java is Java 11; Mirrorline needs Java 17+") == (
        "/opt/java is Java 11; Mirrorline needs Java 17+",
        "",
    )


FINDINGS = [
    Finding("java", True, "/usr/bin/java (17)"),
    Finding.problem("jars kafka", "no broker jars", "run `mirrorline setup`", "warning"),
    Finding("cluster east", False, "east: authentication failed for mirrorline", "check it"),
]


def test_people_read_one_line_per_check_and_a_count():
    assert lines(FINDINGS) == [
        "ok   java: /usr/bin/java (17)",
        "warn jars kafka: no broker jars — fix: run `mirrorline setup`",
        "FAIL east: authentication failed for mirrorline — fix: check it",
        "1 problem (1 warning)",
    ]
    assert summary(FINDINGS[:1]) == "all good"
    assert summary(FINDINGS[:2]) == "all good (1 warning)"
    assert summary(FINDINGS + FINDINGS[2:]) == "2 problems (1 warning)"


def test_the_json_document_has_detail_for_ok_checks_and_problem_with_fix_otherwise():
    assert document(FINDINGS) == {
        "ok": False,
        "checks": [
            {"check": "java", "ok": True, "detail": "/usr/bin/java (17)"},
            {
                "check": "jars kafka",
                "ok": False,
                "problem": "jars kafka: no broker jars",
                "fix": "run `mirrorline setup`",
                "severity": "warning",
            },
            {
                "check": "cluster east",
                "ok": False,
                "problem": "east: authentication failed for mirrorline",
                "fix": "check it",
                "severity": "error",
            },
        ],
    }
    assert document(FINDINGS[:2])["ok"] is True


def test_a_configuration_that_does_not_load_exits_2_without_a_traceback(tmp_path: Path):
    broken = tmp_path / "broken.properties"
    broken.write_text("clusters = east\neast->nowhere.enabled = maybe\n")
    result = CliRunner().invoke(app, ["doctor", "--config", str(broken)])
    assert result.exit_code == 2, result.output
    assert "broken.properties" in result.output and "configuration error" in result.output
    assert "Traceback" not in result.output


def fill(cache: Path, name: str, *jars: str, resolved: str | None = None) -> None:
    where = cache / name
    where.mkdir(parents=True)
    for jar in jars:
        (where / jar).write_bytes(b"")
    coordinates = "\n".join(jar_fetch.jar_set(name).coordinates) + "\n"
    (where / jar_fetch.RESOLVED).write_text(coordinates if resolved is None else resolved)
