"""Every precedence rule, each shown with a properties file a user could write."""

from __future__ import annotations

import pytest

from mirrorline.config.loader import parse_config
from mirrorline.config.model import MirrorConfig

HEADER = """\
clusters = A, B, C
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
C.bootstrap.servers = c:9092
A->B.enabled = true
"""


def load(body: str, **env: str) -> MirrorConfig:
    return parse_config(HEADER + body, source="p.properties", environ=env)


LEVEL_LINES = [
    ("flow", "A->B.offset.lag.max = 50", 50),
    ("cluster", "B.offset.lag.max = 40", 40),
    ("connectors", "connectors.offset.lag.max = 30", 30),
    ("workers", "workers.offset.lag.max = 20", 20),
    ("global", "offset.lag.max = 10", 10),
]


@pytest.mark.parametrize("dropped", range(len(LEVEL_LINES) + 1))
@pytest.mark.parametrize("reverse", [False, True])
def test_flow_setting_levels_rank_flow_cluster_connectors_workers_global(
    dropped: int, reverse: bool
) -> None:
    # Keep the weakest levels only: the strongest remaining one must win,
    # whatever the order of the lines in the file.
    kept = LEVEL_LINES[dropped:]
    lines = [line for _, line, _ in kept]
    if reverse:
        lines.reverse()
    flow = load("\n".join(lines) + "\n").flow("A", "B")
    setting = flow.setting("offset.lag.max")
    if kept:
        level, line, value = kept[0]
        assert setting.value == value, level
        assert setting.origin.key == line.split(" = ")[0]
        assert setting.origin.file == "p.properties"
    else:
        assert setting.value == 100
        assert setting.origin.is_default


def test_cluster_level_flow_settings_apply_to_flows_into_that_cluster() -> None:
    config = load("A.offset.lag.max = 7\nA->B.topics = x\n")
    assert config.flow("A", "B").value("offset.lag.max") == 100  # A is its source
    assert config.flow("B", "A").value("offset.lag.max") == 7  # A is its target
    assert config.flow("C", "A").value("offset.lag.max") == 7
    assert config.flow("A", "C").value("topics") == (".*",)  # another flow's line does not leak


def test_current_name_beats_old_name_at_the_same_level_but_not_across_levels() -> None:
    same_level = load("topics.blacklist = old.*\ntopics.exclude = new.*\n").flow("A", "B")
    assert same_level.value("topics.exclude") == ("new.*",)
    assert same_level.setting("topics.exclude").origin.key == "topics.exclude"
    stronger_old = load("topics.exclude = new.*\nA->B.topics.blacklist = old.*\n")
    assert stronger_old.flow("A", "B").value("topics.exclude") == ("old.*",)
    assert any("old name of topics.exclude" in w.message for w in stronger_old.warnings)
    groups = load("groups.blacklist = g1\n").flow("A", "B")
    assert groups.value("groups.exclude") == ("g1",)
    props = load("config.properties.blacklist = retention.ms\n").flow("A", "B")
    assert not props.config_property_filter.should_replicate("retention.ms")


def test_a_key_written_twice_takes_the_later_line_with_a_warning() -> None:
    config = load("offset.lag.max = 1\noffset.lag.max = 2\n")
    setting = config.flow("A", "B").setting("offset.lag.max")
    assert setting.value == 2
    assert setting.origin.line == 7
    warning = next(w for w in config.warnings if "set again" in w.message)
    assert warning.origin is not None and warning.origin.line == 6


def test_enabled_is_a_flow_setting_like_the_others() -> None:
    config = load("enabled = true\nC->A.enabled = false\n")
    names = {f.name for f in config.enabled_flows()}
    assert names == {"A->B", "A->C", "B->A", "B->C", "C->B"}


CLIENT_LEVELS = [
    ("flow", "A->B.source.cluster.reconnect.backoff.ms = 5", "5"),
    ("cluster", "A.reconnect.backoff.ms = 4", "4"),
    ("connectors", "connectors.reconnect.backoff.ms = 3", "3"),
    ("workers", "workers.reconnect.backoff.ms = 2", "2"),
    ("global", "reconnect.backoff.ms = 1", "1"),
]


@pytest.mark.parametrize("dropped", range(len(CLIENT_LEVELS)))
def test_client_setting_levels(dropped: int) -> None:
    kept = CLIENT_LEVELS[dropped:]
    flow = load("\n".join(line for _, line, _ in reversed(kept)) + "\n").flow("A", "B")
    level, line, value = kept[0]
    for client in ("consumer", "producer", "admin"):
        setting = flow.client_settings("source", client).setting("reconnect.backoff.ms")
        assert (setting.value, setting.origin.key) == (value, line.split(" = ")[0]), level
    # The A. and A->B.source.cluster. lines are about the source; B's clients only
    # see the levels that apply to every cluster.
    target = flow.client_settings("target", "admin").get("reconnect.backoff.ms")
    assert target == (value if level in ("connectors", "workers", "global") else "3")


def test_client_prefixes_inside_one_level() -> None:
    config = load(
        "reconnect.backoff.ms = 1\n"
        "source.cluster.reconnect.backoff.ms = 2\n"
        "consumer.reconnect.backoff.ms = 3\n"
        "source.consumer.reconnect.backoff.ms = 4\n"
        "target.producer.reconnect.backoff.ms = 5\n"
        "producer.override.reconnect.backoff.ms = 6\n"
        "admin.override.reconnect.backoff.ms = 7\n"
    )
    flow = config.flow("A", "B")
    got = {
        (side, client): flow.client_settings(side, client)["reconnect.backoff.ms"]
        for side in ("source", "target")
        for client in ("consumer", "producer", "admin")
    }
    assert got == {
        ("source", "consumer"): "4",
        ("source", "producer"): "2",
        ("source", "admin"): "2",
        ("target", "consumer"): "3",
        ("target", "producer"): "6",
        ("target", "admin"): "7",
    }


def test_a_stronger_level_beats_a_more_specific_prefix() -> None:
    flow = load(
        "source.consumer.fetch.min.bytes = 1\n"
        "A.consumer.fetch.min.bytes = 2\n"
        "A->B.source.cluster.fetch.min.bytes = 3\n"
    ).flow("A", "B")
    setting = flow.client_settings("source", "consumer").setting("fetch.min.bytes")
    assert (setting.value, setting.origin.key) == ("3", "A->B.source.cluster.fetch.min.bytes")


def test_cluster_level_client_settings_follow_the_cluster_not_the_side() -> None:
    config = load("A.consumer.fetch.min.bytes = 9\nB->A.enabled = true\n")
    assert config.flow("A", "B").client_settings("source", "consumer")["fetch.min.bytes"] == "9"
    assert "fetch.min.bytes" not in config.flow("A", "B").client_settings("target", "consumer")
    assert config.flow("B", "A").client_settings("target", "consumer")["fetch.min.bytes"] == "9"
    assert config.clusters["A"].client_settings("consumer")["fetch.min.bytes"] == "9"


def test_per_flow_consumer_override_wins_over_cluster_consumer_setting() -> None:
    config = load("A.consumer.fetch.min.bytes = 2\nA->B.consumer.fetch.min.bytes = 8\n")
    assert config.flow("A", "B").client_settings("source", "consumer")["fetch.min.bytes"] == "8"
    assert config.flow("A", "C").client_settings("source", "consumer")["fetch.min.bytes"] == "2"


def test_plain_client_settings_only_reach_the_client_types_they_belong_to() -> None:
    flow = load("linger.ms = 7\nfetch.min.bytes = 3\n").flow("A", "B")
    for side in ("source", "target"):
        assert flow.client_settings(side, "producer")["linger.ms"] == "7"
        assert "linger.ms" not in flow.client_settings(side, "consumer")
        assert "linger.ms" not in flow.client_settings(side, "admin")
        assert flow.client_settings(side, "consumer")["fetch.min.bytes"] == "3"
        assert "fetch.min.bytes" not in flow.client_settings(side, "producer")


def test_a_setting_under_the_wrong_client_prefix_is_ignored_with_a_warning() -> None:
    config = load("consumer.linger.ms = 7\n")
    assert "linger.ms" not in config.flow("A", "B").client_settings("source", "consumer")
    assert any("linger.ms is a producer setting" in w.message for w in config.warnings)


def test_settings_outside_flows_reach_cluster_clients_but_side_prefixes_do_not() -> None:
    config = load("security.protocol = SSL\nsource.cluster.client.rack = r1\nB.linger.ms = 3\n")
    cluster_b = config.clusters["B"]
    assert cluster_b.client_settings("admin")["security.protocol"] == "SSL"
    assert cluster_b.client_settings("producer")["linger.ms"] == "3"
    assert "client.rack" not in cluster_b.client_settings("consumer")
    assert cluster_b.bootstrap_servers == "b:9092"


def test_consumers_never_auto_commit_whatever_the_file_says() -> None:
    config = load("consumer.enable.auto.commit = true\n")
    setting = (
        config.flow("A", "B").client_settings("source", "consumer").setting("enable.auto.commit")
    )
    assert (setting.value, setting.origin.where) == ("false", "set by Mirrorline")
    assert any("always sets enable.auto.commit=false" in w.message for w in config.warnings)


def test_user_isolation_level_replaces_the_default() -> None:
    flow = load("A->B.consumer.isolation.level = READ_COMMITTED\n").flow("A", "B")
    setting = flow.client_settings("source", "consumer").setting("isolation.level")
    assert setting.value == "read_committed"
    assert setting.origin.key == "A->B.consumer.isolation.level"


def test_max_poll_records_as_flow_setting_or_as_source_consumer_setting() -> None:
    as_consumer = load("A->B.consumer.max.poll.records = 2000\n").flow("A", "B")
    setting = as_consumer.setting("max.poll.records")
    assert (setting.value, setting.origin.key) == (2000, "A->B.consumer.max.poll.records")
    assert "max.poll.records" not in as_consumer.client_settings("source", "consumer")
    assert as_consumer.java_client_settings("source", "consumer")["max.poll.records"] == "2000"
    both = load(
        "A->B.max.poll.records = 10\nA->B.source.consumer.max.poll.records = 20\n"
        "max.poll.records = 30\n"
    ).flow("A", "B")
    assert both.value("max.poll.records") == 20
    flow_level_wins = load("consumer.max.poll.records = 5\nA->B.max.poll.records = 6\n")
    assert flow_level_wins.flow("A", "B").value("max.poll.records") == 6


def test_start_position_falls_back_to_the_mm2_consumer_reset_setting() -> None:
    flow = load("A->B.consumer.auto.offset.reset = latest\n").flow("A", "B")
    setting = flow.setting("start.position")
    assert flow.start_position.kind == "latest"
    assert setting.origin.key == "A->B.consumer.auto.offset.reset"
    explicit = load(
        "A->B.consumer.auto.offset.reset = latest\nA->B.start.position = orders:0:5\n"
    ).flow("A", "B")
    assert explicit.start_position.kind == "offsets"


def test_policy_settings_resolve_per_flow_and_reach_the_policy() -> None:
    identity = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
    config = load(f"replication.policy.separator = _\nA->C.replication.policy.class = {identity}\n")
    ab = config.flow("A", "B")
    assert ab.remote_topic("orders") == "A_orders"
    assert ab.checkpoints_topic == "A_checkpoints_internal"
    ac = config.flow("A", "C")
    assert ac.remote_topic("orders") == "orders"
    assert ac.policy.topic_source("orders") == "A"


def test_clients_of_unchecked_clusters_and_flows_refuse_to_hand_out_broken_settings() -> None:
    from mirrorline.config import ConfigError

    # C takes part in no enabled flow and has no bootstrap servers, so its missing
    # truststore is not an error at load time; its clients are unusable though.
    config = load_without_c("C.security.protocol = SSL\nC.ssl.truststore.location = /etc/c.jks\n")
    with pytest.raises(ConfigError, match="JKS truststore /etc/c.jks does not exist"):
        config.clusters["C"].client_settings("admin")
    with pytest.raises(ConfigError, match="JKS truststore /etc/c.jks does not exist"):
        config.flow("A", "C").client_settings("target", "producer")
    assert config.flow("A", "B").client_settings("target", "producer")["bootstrap.servers"]
    assert config.to_dict()["clusters"]["C"] == {}


def load_without_c(body: str) -> MirrorConfig:
    header = HEADER.replace("C.bootstrap.servers = c:9092\n", "")
    return parse_config(header + body, source="p.properties", environ={})
