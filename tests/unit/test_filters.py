"""Topic, group and config-property filters: MM2's semantics plus run-time names."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorline.filters import (
    ConfigPropertyFilter,
    FilterPatternError,
    GroupFilter,
    NameFilter,
    TopicFilter,
)


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("orders", True),
        ("us-west.orders", True),
        ("mm2-offset-syncs.east.internal", False),
        ("connect-offsets-internal", False),
        ("east.checkpoints.internal", False),
        ("orders.replica", False),
        ("__consumer_offsets", False),
        ("_single_underscore", True),
    ],
)
def test_default_topic_filter_matches_mm2_defaults(topic: str, expected: bool) -> None:
    assert TopicFilter().matches(topic) is expected


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        ("payments", True),
        ("console-consumer-4711", False),
        ("connect-mirror", False),
        ("__internal", False),
        ("my-connect-app", True),
    ],
)
def test_default_group_filter_matches_mm2_defaults(group: str, expected: bool) -> None:
    assert GroupFilter().matches(group) is expected


def test_entries_match_whole_names_like_java_matches() -> None:
    f = TopicFilter(include=("orders",))
    assert f.matches("orders")
    assert not f.matches("orders-v2")
    assert not f.matches("old-orders")


def test_exclude_wins_over_include() -> None:
    f = TopicFilter(include=("orders.*",), exclude=("orders-test",))
    assert f.matches("orders-prod")
    assert not f.matches("orders-test")


def test_empty_include_matches_nothing_and_empty_exclude_nothing_out() -> None:
    assert not NameFilter(include=(), exclude=()).matches("anything")
    assert NameFilter(include=(".*",), exclude=()).matches("__consumer_offsets")


def test_leading_inline_flags_work_in_joined_lists() -> None:
    f = TopicFilter(include=("(?i)orders", "payments"))
    assert f.matches("ORDERS")
    assert f.matches("payments")
    assert not f.matches("PAYMENTS")


@pytest.mark.parametrize("entry", ["orders[", "a{2,1}", "(?P<x>a)", r"\p{Alpha}+", "*x"])
def test_invalid_entries_are_refused_with_the_entry_named(entry: str) -> None:
    with pytest.raises(FilterPatternError) as caught:
        TopicFilter(include=("fine", entry))
    assert caught.value.entry == entry


def test_run_time_names_allow_deny_and_precedence() -> None:
    base = TopicFilter(include=("orders.*",))
    allowed = base.allow("__audit")
    assert allowed.matches("__audit"), "an allowed name beats an exclude pattern"
    denied = allowed.deny("orders-eu")
    assert not denied.matches("orders-eu"), "a denied name beats an include pattern"
    assert denied.matches("orders-us")
    back = denied.allow("orders-eu")
    assert back.matches("orders-eu")
    assert "orders-eu" not in back.denied


def test_filters_are_immutable_values() -> None:
    f = TopicFilter()
    g = f.deny("x")
    assert f is not g
    assert f.matches("x") and not g.matches("x")
    assert f == TopicFilter()
    with pytest.raises(AttributeError):
        f.include = ("y",)  # type: ignore[misc]
    assert hash(f) == hash(TopicFilter())


def test_config_property_filter_defaults() -> None:
    f = ConfigPropertyFilter()
    assert f.should_replicate("retention.ms")
    assert f.should_replicate("cleanup.policy")
    for prop in (
        "min.insync.replicas",
        "unclean.leader.election.enable",
        "message.timestamp.type",
        "message.timestamp.difference.max.ms",
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    ):
        assert not f.should_replicate(prop), prop
    assert not f.should_replicate_source_default("retention.ms")


def test_config_property_filter_custom_exclude_replaces_default() -> None:
    f = ConfigPropertyFilter(exclude=("retention\\..*",), use_defaults_from="source")
    assert not f.should_replicate("retention.ms")
    assert f.should_replicate("min.insync.replicas")
    assert f.should_replicate_source_default("segment.bytes")


TOPIC_NAMES = st.text(alphabet="abcxyz._-", min_size=1, max_size=12)
PATTERN_SETS = [
    ((".*",), ()),
    ((".*",), (r".*[\-\.]internal", r".*\.replica", r"__.*")),
    (("a.*", "b.*"), ("ab.*",)),
    (("(?i)A.*", "x"), ("a_.*",)),
    ((), ()),
    (("a|b", "c.c"), ("c-c",)),
]


@given(
    names=st.lists(TOPIC_NAMES, max_size=20),
    patterns=st.sampled_from(PATTERN_SETS),
    allowed=st.sets(TOPIC_NAMES, max_size=3),
    denied=st.sets(TOPIC_NAMES, max_size=3),
)
def test_java_pattern_accepts_exactly_what_the_filter_accepts(
    names: list[str],
    patterns: tuple[tuple[str, ...], tuple[str, ...]],
    allowed: set[str],
    denied: set[str],
) -> None:
    include, exclude = patterns
    f = TopicFilter(include=include, exclude=exclude).allow(*allowed).deny(*denied)
    compiled = re.compile(f.java_pattern())
    for name in [*names, *allowed, *denied]:
        assert (compiled.fullmatch(name) is not None) == f.matches(name), name
