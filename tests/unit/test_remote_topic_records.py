"""The remote-topic metadata records: their bytes, and which ones a change needs."""

from __future__ import annotations

import json

from mirrorline.control.remote_topics import (
    decode_metadata,
    metadata_changes,
    metadata_key,
    metadata_value,
)


def test_key_and_value_are_sorted_compact_versioned_json():
    assert metadata_key("east->west", "orders") == (
        b'{"flow":"east->west","topic":"orders","version":1}'
    )
    value = metadata_value("east", "west", "orders", "east.orders", 1_700_000_000_000)
    assert value == (
        b'{"remote_topic":"east.orders","source":"east","target":"west",'
        b'"topic":"orders","updated_ms":1700000000000,"version":1}'
    )


def test_decode_reads_entries_and_tombstones():
    key = metadata_key("east->west", "orders")
    value = metadata_value("east", "west", "orders", "east.orders", 1)
    assert decode_metadata(key, value) == ("east->west", "orders", "east.orders")
    assert decode_metadata(key, None) == ("east->west", "orders", None)


def test_decode_skips_other_formats_without_failing():
    key = metadata_key("east->west", "orders")
    newer = json.dumps({"flow": "east->west", "topic": "orders", "version": 2}).encode()
    assert decode_metadata(newer, None) is None
    assert decode_metadata(key, b'{"version": 2, "remote_topic": "x"}') is None
    assert decode_metadata(b"not json", b"{}") is None
    assert decode_metadata(None, None) is None
    assert decode_metadata(b"[1, 2]", None) is None


def test_nothing_changed_means_nothing_to_write():
    pairs = {"orders": "east.orders", "audit": "east.audit"}
    assert not metadata_changes(pairs, dict(pairs))


def test_new_topics_are_added_and_gone_topics_removed():
    changes = metadata_changes(
        {"orders": "east.orders", "old": "east.old"},
        {"orders": "east.orders", "new": "east.new"},
    )
    assert changes.upserts == {"new": "east.new"}
    assert changes.removals == ("old",)


def test_a_renamed_remote_topic_is_rewritten():
    # A policy change (prefix to identity) renames the remote topic of a source topic.
    changes = metadata_changes({"orders": "east.orders"}, {"orders": "orders"})
    assert changes.upserts == {"orders": "orders"} and changes.removals == ()


def test_first_publication_writes_everything():
    changes = metadata_changes({}, {"b": "east.b", "a": "east.a"})
    assert list(changes.upserts) == ["a", "b"]
