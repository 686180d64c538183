"""An MM2 file's own Java policy and filters: the bridge's answers, and the file's errors.

These run a real `java` (the plugin bridge) with a jar of example plugins
compiled for the session (`support/java_plugins.py`); no cluster.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline import java_bridge
from mirrorline.cli.main import app
from mirrorline.config import load_config
from mirrorline.control.flow_control import FlowControl, ListChanges
from mirrorline.java_bridge import JavaCallError, JavaClassError, JavaObject
from mirrorline.java_classes import JavaReplicationPolicy, JavaTopicFilter


def _policy(jar: Path, class_name: str, **settings: str) -> JavaReplicationPolicy:
    java = JavaObject("replication-policy", class_name, (jar,), tuple(sorted(settings.items())))
    java.load()
    return JavaReplicationPolicy(java)


def test_the_policy_answers_every_question_as_its_java_class(plugin_jar: Path) -> None:
    policy = _policy(
        plugin_jar, "example.mirror.SuffixReplicationPolicy", **{"replication.policy.marker": "~"}
    )
    assert policy.format_remote_topic("east", "orders") == "orders~east"
    assert policy.topic_source("orders~east") == "east"
    assert policy.upstream_topic("orders~east~west") == "orders~east"
    assert policy.original_topic("orders~east~west") == "orders"
    assert policy.topic_source("orders") is None and policy.upstream_topic("orders") is None
    # The interface's defaults, answered by Java too.
    assert policy.heartbeats_topic() == "heartbeats"
    assert policy.offset_syncs_topic("west") == "mm2-offset-syncs.west.internal"
    assert policy.checkpoints_topic("east") == "east.checkpoints.internal"
    assert policy.is_heartbeats_topic("heartbeats~east")
    assert policy.is_checkpoints_topic("east.checkpoints.internal")
    assert policy.is_mirror_internal_topic("mm2-offset-syncs.west.internal")
    assert policy.is_internal_topic("__consumer_offsets") and not policy.is_internal_topic("a")
    # Names with the protocol's separators cross unharmed.
    assert policy.format_remote_topic("e\tast", "a\\b\nc") == "a\\b\nc~e\tast"


def test_each_question_reaches_java_once_per_process(plugin_jar: Path) -> None:
    # CountingPolicy numbers the questions it is asked.
    policy = _policy(plugin_jar, "example.mirror.CountingPolicy")
    first = policy.format_remote_topic("east", "orders")
    assert first == "east.orders.1"
    assert policy.format_remote_topic("east", "orders") == first
    assert policy.format_remote_topic("east", "payments") == "east.payments.2"
    # A copy in another process (pickled) loads its own instance: answers start again.
    copy = pickle.loads(pickle.dumps(policy))
    assert copy == policy and copy.format_remote_topic("east", "audit") == "east.audit.3"


def test_a_filter_is_asked_again_after_a_while(
    plugin_jar: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # AlternatingTopicFilter says yes, no, yes, ... to successive questions.
    java = JavaObject("topic-filter", "example.mirror.AlternatingTopicFilter", (plugin_jar,), ())
    assert java.test("shouldReplicateTopic", "orders")
    assert java.test("shouldReplicateTopic", "orders")  # kept
    monkeypatch.setattr(java_bridge, "FILTER_ANSWERS_S", 0.0)
    assert not java.test("shouldReplicateTopic", "orders")  # asked again: its new mind


def test_a_java_exception_names_the_class_and_the_question(plugin_jar: Path) -> None:
    policy = _policy(plugin_jar, "example.mirror.CountingPolicy")
    with pytest.raises(JavaCallError) as caught:
        policy.format_remote_topic("east", "boom")
    message = str(caught.value)
    assert "example.mirror.CountingPolicy.formatRemoteTopic(east, boom)" in message
    assert "IllegalStateException: no name for boom" in message


@pytest.mark.parametrize(
    ("class_name", "reason", "text"),
    [
        ("example.mirror.Missing", "not-found", "is in none of the jars"),
        ("example.mirror.PrefixTopicFilter", "interface", "does not implement"),
    ],
)
def test_a_class_that_cannot_serve_says_why(
    plugin_jar: Path, class_name: str, reason: str, text: str
) -> None:
    with pytest.raises(JavaClassError) as caught:
        JavaObject("replication-policy", class_name, (plugin_jar,), ()).load()
    assert caught.value.reason == reason
    assert str(caught.value).startswith(f"{class_name} {text}")


def _file(tmp_path: Path, jar: Path, body: str) -> Path:
    path = tmp_path / "mm2.properties"
    path.write_text(
        "clusters = east, west\n"
        "east.bootstrap.servers = 127.0.0.1:1\n"
        "west.bootstrap.servers = 127.0.0.1:2\n"
        "east->west.enabled = true\n"
        f"plugin.path = {jar}\n" + body
    )
    return path


def test_a_flow_uses_the_file_s_java_classes_everywhere(tmp_path: Path, plugin_jar: Path) -> None:
    config = load_config(
        _file(
            tmp_path,
            plugin_jar,
            "replication.policy.class = example.mirror.SuffixReplicationPolicy\n"
            "topic.filter.class = example.mirror.PrefixTopicFilter\n"
            "east->west.prefix.filter.allow = jp-\n"  # the class's own setting
            "group.filter.class = example.mirror.PrefixGroupFilter\n"
            "config.property.filter.class = example.mirror.RetentionOnlyConfigFilter\n",
        )
    )
    flow = config.flow("east", "west")
    assert flow.remote_topic("jp-orders") == "jp-orders_from_east"
    assert flow.checkpoints_topic == "east.checkpoints.internal"
    assert flow.should_replicate_topic("jp-orders") and not flow.should_replicate_topic("orders")
    # Loops are seen through the Java policy's answers.
    assert not flow.should_replicate_topic("jp-orders_from_west")
    assert flow.should_replicate_group("jp-billing") and not flow.should_replicate_group("billing")
    properties = flow.config_property_filter
    assert properties.should_replicate("retention.ms") and not properties.should_replicate("x")
    assert properties.should_replicate_source_default("retention.bytes")

    # Run-time lists still rule: an added entry selects, an added exclusion removes.
    control = FlowControl(
        flow.name,
        lists={
            "topics": ListChanges(added=("orders",)),
            "topics.exclude": ListChanges(added=("jp-secret.*",)),
        },
    )
    effective = control.effective(flow)
    assert isinstance(effective.topic_filter, JavaTopicFilter)
    assert effective.should_replicate_topic("orders")
    assert not effective.should_replicate_topic("jp-secret-1")
    assert effective.should_replicate_topic("jp-orders")
    assert not effective.should_replicate_topic("other")


@pytest.mark.parametrize(
    ("body", "key", "expected"),
    [
        (
            "topic.filter.class = example.mirror.NoSuchFilter\n",
            "topic.filter.class",
            "example.mirror.NoSuchFilter is in no jar of plugin.path",
        ),
        (
            "group.filter.class = example.mirror.PrefixTopicFilter\n",
            "group.filter.class",
            "example.mirror.PrefixTopicFilter does not implement "
            "org.apache.kafka.connect.mirror.GroupFilter",
        ),
        (
            "topic.filter.class = example.mirror.PrefixTopicFilter\n",
            "topic.filter.class",
            "example.mirror.PrefixTopicFilter threw in configure(): "
            "java.lang.IllegalArgumentException: prefix.filter.allow is required",
        ),
        (
            "replication.policy.class = example.mirror.NoSuchPolicy\n",
            "replication.policy.class",
            "unknown replication policy example.mirror.NoSuchPolicy: in no jar of plugin.path",
        ),
    ],
)
def test_config_check_names_the_key_and_the_class(
    tmp_path: Path, plugin_jar: Path, body: str, key: str, expected: str
) -> None:
    path = _file(tmp_path, plugin_jar, body)
    result = CliRunner().invoke(app, ["config", "check", str(path), "--offline"])
    assert result.exit_code == 2, result.output
    assert f"mm2.properties:6: {key}: {expected}" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_without_mm2_s_interfaces_the_key_names_what_to_do(
    tmp_path: Path, plugin_jar: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh process's view: no bridge yet, an empty jar cache and no Maven Central.
    monkeypatch.setattr(java_bridge, "_current", None)
    monkeypatch.setattr(java_bridge, "_setup_failure", None)
    monkeypatch.setenv("MIRRORLINE_JVM_LIB", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("MIRRORLINE_MAVEN_REPOSITORY", "http://127.0.0.1:1/maven2/")
    body = (
        "replication.policy.class = example.mirror.SuffixReplicationPolicy\n"
        "topic.filter.class = example.mirror.PrefixGroupFilter\n"
    )
    result = CliRunner().invoke(app, ["config", "check", str(_file(tmp_path, plugin_jar, body))])
    assert result.exit_code == 2, result.output
    shown = " ".join(result.output.split())
    assert "mm2.properties:6: replication.policy.class: cannot run the Java class" in shown
    assert "cannot fetch MirrorMaker 2's interfaces" in shown
    assert "mirrorline setup --java-plugins" in shown
    assert "Traceback" not in result.output
