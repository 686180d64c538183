"""The jar cache's rules: where it is, when a set counts as fetched, what Ivy is asked."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pyspark
import pytest

from mirrorline import jar_fetch, jvm


def test_the_cache_is_the_override_else_the_users_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORLINE_JVM_LIB", str(tmp_path / "offline"))
    assert jvm.jar_cache_dir() == tmp_path / "offline"
    monkeypatch.delenv("MIRRORLINE_JVM_LIB")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert jvm.jar_cache_dir() == tmp_path / "xdg" / "mirrorline" / "jvm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert jvm.jar_cache_dir() == tmp_path / "home" / ".cache" / "mirrorline" / "jvm"


def test_the_connector_follows_the_installed_pyspark():
    (coordinates,) = jar_fetch.jar_set("spark-kafka").coordinates
    assert coordinates == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"


def test_connect_transforms_follow_the_kafka_client_the_writer_is_built_against():
    # The writer runs Connect's transforms beside the Kafka client of Spark's connector.
    pom = Path(jar_fetch.__file__).parents[2] / "jvm" / "writer" / "pom.xml"
    found = [e.text for e in ET.parse(pom).iter() if e.tag.endswith("spark.kafka.clients.version")]
    (coordinates,) = jar_fetch.jar_set("connect-transforms").coordinates
    assert found == [jar_fetch.CONNECT_VERSION]
    assert coordinates == f"org.apache.kafka:connect-transforms:{jar_fetch.CONNECT_VERSION}"


def _filled(cache: Path, name: str, coordinates: list[str]) -> None:
    (cache / name).mkdir(parents=True)
    (cache / name / "some-1.0.jar").write_bytes(b"")
    (cache / name / jar_fetch.RESOLVED).write_text("\n".join(coordinates) + "\n")


def test_a_set_is_complete_only_at_the_coordinates_this_installation_needs(tmp_path):
    wanted = list(jar_fetch.jar_set("kafka").coordinates)
    _filled(tmp_path, "kafka", wanted)
    assert jar_fetch.is_complete("kafka", tmp_path)
    assert jar_fetch.ensure("kafka", tmp_path) == [tmp_path / "kafka" / "some-1.0.jar"]

    older = [c.replace(jar_fetch.KAFKA_VERSION, "3.0.0") for c in wanted]
    _filled(tmp_path / "upgraded", "kafka", older)
    assert not jar_fetch.is_complete("kafka", tmp_path / "upgraded")
    # Jars without a record of what they are (copied by hand, half fetched): not complete.
    (tmp_path / "bare" / "kafka").mkdir(parents=True)
    (tmp_path / "bare" / "kafka" / "kafka_2.13-4.3.1.jar").write_bytes(b"")
    assert not jar_fetch.is_complete("kafka", tmp_path / "bare")


def test_ivy_is_asked_for_each_artifact_with_its_runtime_dependencies():
    module = ET.fromstring(jar_fetch._module_xml(jar_fetch.jar_set("kafka")))
    asked = [
        (d.get("org"), d.get("name"), d.get("rev"), d.get("conf"))
        for d in module.iter("dependency")
    ]
    assert asked == [
        ("org.apache.kafka", "kafka_2.13", jar_fetch.KAFKA_VERSION, "default->default(runtime)"),
        ("org.slf4j", "slf4j-api", "2.0.17", "default->default(runtime)"),
        (
            "org.apache.logging.log4j",
            "log4j-slf4j2-impl",
            jar_fetch.LOG4J_VERSION,
            "default->default(runtime)",
        ),
    ]
    settings = ET.fromstring(jar_fetch._settings_xml("https://mirror.example/maven2/"))
    (resolver,) = settings.iter("ibiblio")
    assert resolver.get("root") == "https://mirror.example/maven2/"
    assert resolver.get("m2compatible") == "true"


def test_mm2_interfaces_are_fetched_without_connect_s_runtime(tmp_path):
    wanted = jar_fetch.jar_set("mm2-interfaces")
    module = ET.fromstring(jar_fetch._module_xml(wanted))
    alone = {d.get("name"): d.get("transitive") for d in module.iter("dependency")}
    assert alone == {"connect-mirror-client": None, "connect-api": None, "connect-mirror": "false"}
    # A cache filled before connect-mirror was fetched alone is fetched again.
    _filled(tmp_path, "mm2-interfaces", list(wanted.coordinates + wanted.alone))
    assert not jar_fetch.is_complete("mm2-interfaces", tmp_path)
    _filled(tmp_path / "now", "mm2-interfaces", wanted.resolved)
    assert jar_fetch.is_complete("mm2-interfaces", tmp_path / "now")


def test_a_missing_set_of_the_checkout_only_names_make_jvm(tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORLINE_JVM_LIB", str(tmp_path))
    with pytest.raises(jvm.JvmSetupError, match=r"no jars in .*mirrormaker: run `make jvm`"):
        jvm.jars("mirrormaker")


def test_the_writer_comes_with_the_package():
    jar = jvm.writer_jar()
    assert jar.name == "mirrorline-writer.jar"
    assert jar.parent == Path(jvm.__file__).parent / "jars"


def test_a_missing_artifact_is_named_and_not_tried_again() -> None:
    output = "\n".join([
        ":: problems summary ::",
        "\t\tmodule not found: org.apache.spark#spark-sql-kafka-0-10_2.13;9.9.9",
        "\t\t:: UNRESOLVED DEPENDENCIES ::",
    ])  # fmt: skip
    reason, missing = jar_fetch._failure(output)
    assert missing
    assert "spark-sql-kafka-0-10_2.13;9.9.9" in reason


def test_a_broken_transfer_names_its_exception_not_the_trace_tail() -> None:
    output = "\n".join([
        "Exception in thread \"main\" java.lang.RuntimeException: problem during retrieve",
        "\tat org.apache.ivy.Main.run(Main.java:300)",
        "Caused by: java.net.SocketException: Connection reset",
        "\tat java.base/sun.nio.ch.NioSocketImpl.implRead(NioSocketImpl.java:318)",
        "\t... 4 more",
    ])  # fmt: skip
    reason, missing = jar_fetch._failure(output)
    assert not missing
    assert reason == "Caused by: java.net.SocketException: Connection reset"
    assert jar_fetch._failure("")[0] == "Ivy exited with no message"
