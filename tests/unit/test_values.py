"""Value parsers (Kafka ConfigDef rules), start positions and secret detection."""

from __future__ import annotations

import pytest

from mirrorline.config.redact import REDACTED, is_secret_key, shown
from mirrorline.config.start_position import PartitionOffset, parse_start_position
from mirrorline.config.values import (
    parse_bool,
    parse_int,
    parse_list,
    parse_patterns,
    parse_positive_seconds,
    parse_replication_factor,
    parse_topic_name,
)


def test_booleans_follow_kafka() -> None:
    assert parse_bool(" TRUE ") is True
    assert parse_bool("false") is False
    for bad in ("yes", "1", "", "tru"):
        with pytest.raises(ValueError):
            parse_bool(bad)


def test_integers_and_bounds() -> None:
    assert parse_int(" 42 ") == 42
    assert parse_int("-1") == -1
    for bad in ("4.2", "1_000", "ten", "", "٤"):
        with pytest.raises(ValueError):
            parse_int(bad)
    with pytest.raises(ValueError, match="at least 1"):
        parse_int("0", minimum=1)


def test_intervals_must_be_positive() -> None:
    assert parse_positive_seconds("600") == 600
    for bad in ("0", "-1", "soon"):
        with pytest.raises(ValueError):
            parse_positive_seconds(bad)


def test_replication_factors() -> None:
    assert parse_replication_factor("-1") == -1
    assert parse_replication_factor("3") == 3
    for bad in ("0", "-2", "40000"):
        with pytest.raises(ValueError):
            parse_replication_factor(bad)


def test_lists_split_like_kafka() -> None:
    assert parse_list("a, b ,c") == ("a", "b", "c")
    assert parse_list("   ") == ()
    assert parse_list("a,,b") == ("a", "", "b")


def test_pattern_lists_are_checked() -> None:
    assert parse_patterns("orders.*, payments") == ("orders.*", "payments")
    with pytest.raises(ValueError, match="'orders\\['"):
        parse_patterns("ok, orders[")


def test_topic_names() -> None:
    assert parse_topic_name("") == ""
    assert parse_topic_name("dlq.orders_v2-x") == "dlq.orders_v2-x"
    for bad in ("a b", "..", "x" * 250, "a/b"):
        with pytest.raises(ValueError):
            parse_topic_name(bad)


@pytest.mark.parametrize(
    ("text", "kind", "timestamp"),
    [
        ("earliest", "earliest", None),
        ("Latest", "latest", None),
        ("1714550400000", "timestamp", 1714550400000),
        ("2024-05-01T08:00:00Z", "timestamp", 1714550400000),
        ("2024-05-01T10:00:00+02:00", "timestamp", 1714550400000),
    ],
)
def test_start_positions(text: str, kind: str, timestamp: int | None) -> None:
    position = parse_start_position(text)
    assert position.kind == kind
    assert position.timestamp_ms == timestamp


def test_start_position_explicit_offsets() -> None:
    position = parse_start_position("orders:0:42, Tx.events:3:7")
    assert position.kind == "offsets"
    assert position.offsets == (
        PartitionOffset("orders", 0, 42),
        PartitionOffset("Tx.events", 3, 7),
    )
    assert position.offset_for("orders", 0) == 42
    assert position.offset_for("orders", 1) is None
    assert str(position) == "orders:0:42, Tx.events:3:7"


@pytest.mark.parametrize(
    "text",
    ["soonish", "2024-05-01T08:00:00", "orders:x:1", "orders:0", "bad topic:0:1", "a:0:1, a:0:2"],
)
def test_bad_start_positions(text: str) -> None:
    with pytest.raises(ValueError):
        parse_start_position(text)


@pytest.mark.parametrize(
    "key",
    [
        "sasl.jaas.config",
        "A.sasl.jaas.config",
        "ssl.truststore.password",
        "ssl.keystore.key",
        "ssl.key.pem",
        "sasl.password",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.config",
        "basic.auth.credentials.source",
        "api.token",
    ],
)
def test_secret_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key", ["bootstrap.servers", "sasl.username", "ssl.truststore.location", "token.endpoint.url"]
)
def test_non_secret_keys(key: str) -> None:
    assert not is_secret_key(key)


def test_shown_hides_secrets() -> None:
    assert shown("hunter2", secret=True) == REDACTED
    assert shown("orders", secret=False) == "'orders'"
