"""Offsets files: the CSV Kafka's `kafka-consumer-groups` reads, and Mirrorline's JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from mirrorline.formats import Checkpoint
from mirrorline.offset_files import (
    GroupOffset,
    OffsetsFileError,
    parse_offsets,
    read_offsets_file,
    to_csv,
    to_json,
)

OFFSETS = [
    GroupOffset("east.orders", 1, 70, 75, "m1"),
    GroupOffset("east.orders", 0, 998, 1000, ""),
    GroupOffset("east.payments", 0, 0, 0, "ünïcode"),
]
GENERATED = datetime(2026, 11, 22, 2, 30, tzinfo=UTC)


def parse(text: str, group: str = "billing", target: str = "west") -> list[GroupOffset]:
    return parse_offsets(text, name="f.csv", group=group, target=target)


def problems(text: str, group: str = "billing", target: str = "west") -> tuple[str, ...]:
    with pytest.raises(OffsetsFileError) as caught:
        parse(text, group, target)
    return caught.value.problems


def test_csv_is_topic_partition_offset_lines_sorted_without_header():
    assert to_csv(OFFSETS) == "east.orders,0,998\neast.orders,1,70\neast.payments,0,0\n"


def test_csv_round_trip_keeps_topic_partition_and_offset():
    parsed = parse(to_csv(OFFSETS))
    assert {(o.topic, o.partition, o.offset) for o in parsed} == {
        (o.topic, o.partition, o.offset) for o in OFFSETS
    }
    assert all(o.upstream_offset is None and o.metadata == "" for o in parsed)


def test_json_document_names_group_flow_and_time_and_round_trips():
    text = to_json(OFFSETS, group="billing", source="east", target="west", generated=GENERATED)
    document = json.loads(text)
    assert document["version"] == 1
    assert (document["group"], document["source"], document["target"]) == (
        "billing",
        "east",
        "west",
    )
    assert document["generated"] == "2026-11-22T02:30:00+00:00"
    assert document["offsets"][0] == {
        "topic": "east.orders",
        "partition": 0,
        "offset": 998,
        "upstream_offset": 1000,
        "metadata": "",
    }
    assert sorted(parse(text), key=lambda o: (o.topic, o.partition)) == sorted(
        OFFSETS, key=lambda o: (o.topic, o.partition)
    )


def test_offsets_from_a_checkpoint_are_its_downstream_offset():
    checkpoint = Checkpoint("billing", "east.orders", 2, 1000, 998, "meta")
    assert GroupOffset.from_checkpoint(checkpoint) == GroupOffset(
        "east.orders", 2, 998, 1000, "meta"
    )


def test_csv_tolerates_blank_lines_spaces_and_crlf():
    parsed = parse("\n t , 0 , 5 \r\n\r\nt,1,6\n\n")
    assert [(o.topic, o.partition, o.offset) for o in parsed] == [("t", 0, 5), ("t", 1, 6)]


def test_csv_with_group_column_keeps_the_lines_of_the_group():
    parsed = parse("billing,t,0,5\nother,t,0,9\nbilling,t,1,6\n")
    assert [(o.partition, o.offset) for o in parsed] == [(0, 5), (1, 6)]


def test_csv_with_only_other_groups_names_them():
    assert problems("a,t,0,5\nb,t,0,9\n") == (
        "f.csv: no offsets for group billing (the file has: a, b)",
    )


def test_csv_bad_lines_are_all_reported_with_their_line_numbers():
    text = f"t,0,5\nt,x,6\nt,1,-1\n,2,3\nt,3\nt,0,7\ng,t,4,1\nt,5,{2**63}\n"
    assert problems(text) == (
        "f.csv:2: partition must be a non-negative integer, got 'x'",
        "f.csv:3: offset must be a non-negative integer, got '-1'",
        "f.csv:4: topic must be a topic name, got ''",
        "f.csv:5: expected topic,partition,offset (or group,topic,partition,offset), "
        "found 2 fields",
        "f.csv:6: t partition 0 is already given at f.csv:1",
        "f.csv:7: 4 fields, but line 1 has 3 (every line has the same fields)",
        f"f.csv:8: offset must be a non-negative integer, got '{2**63}'",
    )


def test_csv_header_is_refused_because_kafka_consumer_groups_reads_none():
    assert problems("topic,partition,offset\nt,0,5\n") == (
        "f.csv:1: a header line; kafka-consumer-groups reads none, remove it",
    )


def test_empty_file_is_refused():
    assert problems("\n\n") == ("f.csv: no offsets in the file",)


def test_json_for_another_group_or_cluster_is_refused():
    text = to_json(OFFSETS, group="other", source="east", target="central", generated=GENERATED)
    found = problems(text)
    assert found[0] == "f.csv: offsets of group 'other', not of billing"
    assert found[1].startswith("f.csv: offsets for cluster 'central', not west")


def test_json_bad_entries_are_reported_by_index():
    document = {
        "version": 1,
        "group": "billing",
        "target": "west",
        "offsets": [
            {"topic": "t", "partition": 0, "offset": 5},
            {"topic": "t", "partition": True, "offset": 5.5},
            "t,1,5",
            {"topic": "t", "partition": 0, "offset": 6, "metadata": 3},
        ],
    }
    assert problems(json.dumps(document)) == (
        "f.csv: offsets[1]: partition must be a non-negative integer, got True; "
        "offset must be a non-negative integer, got 5.5",
        "f.csv: offsets[2]: expected an object with topic, partition and offset",
        "f.csv: offsets[3]: metadata must be a string, got 3",
    )


def test_json_syntax_error_names_the_line():
    assert problems('{\n  "group": "billing",\n  oops\n}') == (
        "f.csv:3: not valid JSON: Expecting property name enclosed in double quotes",
    )


def test_json_of_an_unknown_version_is_refused():
    text = json.dumps({"version": 2, "group": "billing", "target": "west", "offsets": []})
    assert problems(text)[0] == "f.csv: version 2 is not one Mirrorline reads (1)"


def test_unreadable_file_is_named(tmp_path):
    with pytest.raises(OffsetsFileError) as caught:
        read_offsets_file(tmp_path / "missing.csv", group="g", target="west")
    assert str(caught.value).startswith(f"{tmp_path / 'missing.csv'}: cannot read:")
