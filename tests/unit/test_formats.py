"""MM2 wire formats: exact bytes, round trips and clear errors on bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorline.formats import Checkpoint, FormatError, Heartbeat, OffsetSync

offsets = st.integers(min_value=-1, max_value=2**63 - 1)
names = st.text(max_size=200)
partitions = st.integers(min_value=0, max_value=2**31 - 1)


def test_offset_sync_bytes():
    sync = OffsetSync("orders", 3, 10, 7)
    assert sync.key() == b"\x00\x06orders" + b"\x00\x00\x00\x03"
    assert sync.value() == (10).to_bytes(8, "big") + (7).to_bytes(8, "big")


def test_checkpoint_bytes():
    cp = Checkpoint("billing", "east.orders", 1, 42, 40, "m")
    assert cp.key() == b"\x00\x07billing\x00\x0beast.orders\x00\x00\x00\x01"
    assert cp.value() == (
        b"\x00\x00" + (42).to_bytes(8, "big") + (40).to_bytes(8, "big") + b"\x00\x01m"
    )


def test_heartbeat_bytes():
    hb = Heartbeat("east", "west", 1_700_000_000_000)
    assert hb.key() == b"\x00\x04east\x00\x04west"
    assert hb.value() == b"\x00\x00" + (1_700_000_000_000).to_bytes(8, "big")


def test_strings_are_utf8_with_byte_length():
    assert OffsetSync("é", 0, 0, 0).key()[:4] == b"\x00\x02\xc3\xa9"


@given(names, partitions, offsets, offsets)
def test_offset_sync_round_trip(topic, partition, up, down):
    sync = OffsetSync(topic, partition, up, down)
    assert OffsetSync.decode(sync.key(), sync.value()) == sync


@given(names, names, partitions, offsets, offsets, names)
def test_checkpoint_round_trip(group, topic, partition, up, down, metadata):
    cp = Checkpoint(group, topic, partition, up, down, metadata)
    assert Checkpoint.decode(cp.key(), cp.value()) == cp


@given(names, names, st.integers(min_value=0, max_value=2**63 - 1))
def test_heartbeat_round_trip(source, target, ts):
    hb = Heartbeat(source, target, ts)
    assert Heartbeat.decode(hb.key(), hb.value()) == hb


@pytest.mark.parametrize(
    "decode, key, value, problem",
    [
        (OffsetSync.decode, b"\x00\x05ab", b"", "truncated"),
        (
            OffsetSync.decode,
            OffsetSync("t", 0, 1, 1).key() + b"x",
            OffsetSync("t", 0, 1, 1).value(),
            "trailing",
        ),
        (OffsetSync.decode, None, b"", "null"),
        (Heartbeat.decode, Heartbeat("a", "b", 1).key(), b"\x00\x01" + bytes(8), "version 1"),
        (Checkpoint.decode, b"\xff\xff", b"", "negative string length"),
        (Heartbeat.decode, b"\x00\x01\xff\x00\x01a", Heartbeat("a", "b", 1).value(), "not UTF-8"),
    ],
)
def test_malformed_records_are_rejected_with_a_reason(decode, key, value, problem):
    with pytest.raises(FormatError, match=problem):
        decode(key, value)


def test_oversized_string_is_refused():
    with pytest.raises(FormatError, match="32767"):
        OffsetSync("x" * 40_000, 0, 0, 0).key()
