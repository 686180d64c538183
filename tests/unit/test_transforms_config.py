"""Single message transforms as an MM2 file configures them: the typed chain per flow
with its origins, and every mistake an error naming the transform and the key (the
classes themselves are checked in a short Java run with Kafka Connect's own jars)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config.errors import ConfigError
from mirrorline.config.loader import parse_config
from mirrorline.control.translation import TranslationStore
from mirrorline.engine.batch_writer import partition_result

SMT = "org.apache.kafka.connect.transforms."
HEAD = (
    "clusters = a, b, c\n"
    "a.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:2\n"
    "c.bootstrap.servers = 127.0.0.1:3\n"
    "a->b.enabled = true\na->c.enabled = true\n"
)
CHAIN = (
    "transforms = tag, only\n"
    f"transforms.tag.type = {SMT}InsertHeader\n"
    "transforms.tag.header = origin\n"
    "transforms.tag.value.literal = east\n"
    f"transforms.only.type = {SMT}Filter\n"
    "transforms.only.predicate = marked\n"
    "transforms.only.negate = true\n"
    "predicates = marked\n"
    f"predicates.marked.type = {SMT}predicates.HasHeaderKey\n"
    "predicates.marked.name = keep\n"
)


def _flows(text: str):
    config = parse_config(HEAD + text, source="mm2.properties")
    return {f.name: f for f in config.enabled_flows()}


def test_the_chain_is_typed_per_flow_with_each_line_ranked_on_its_own() -> None:
    flows = _flows(
        CHAIN
        + "c.transforms.tag.value.literal = to-c\n"  # cluster level: flows into c
        + "a->c.transforms = tag, route\n"  # flow level: this flow's own list
        + f"transforms.route.type = {SMT}RegexRouter\n"
        + "transforms.route.regex = a[.](.*)\n"
        + "a->c.transforms.route.replacement = copy-$1\n"
    )
    ab, ac = flows["a->b"].transforms, flows["a->c"].transforms
    assert [t.name for t in ab.transforms] == ["tag", "only"]
    tag, only = ab.transforms
    assert tag.plugin.class_name == f"{SMT}InsertHeader"
    assert {k: s.value for k, s in tag.plugin.settings.items()} == {
        "type": f"{SMT}InsertHeader",
        "header": "origin",
        "value.literal": "east",
    }
    assert (only.predicate, only.negate) == ("marked", True)
    assert "predicate" not in only.plugin.settings and "negate" not in only.plugin.settings
    assert ab.predicates["marked"].settings["name"].value == "keep"
    assert tag.plugin.origin.where == "mm2.properties:8"
    assert [t.name for t in ac.transforms] == ["tag", "route"]
    ac_tag, route = ac.transforms
    assert ac_tag.plugin.settings["value.literal"].value == "to-c"
    assert ac_tag.plugin.settings["value.literal"].origin.key == "c.transforms.tag.value.literal"
    assert route.plugin.settings["replacement"].origin.key == "a->c.transforms.route.replacement"
    # What the writer reads: the chain, and None for a flow that copies records as they are.
    sent = ab.as_json()
    assert sent is not None and [t["name"] for t in sent["transforms"]] == ["tag", "only"]
    assert sent["transforms"][1]["predicate"] == "marked" and sent["transforms"][1]["negate"]
    plain = _flows("")["a->b"].transforms
    assert not plain.changes_records and plain.as_json() is None


def test_a_simple_header_converter_makes_the_writer_run_connect_even_without_transforms():
    converter = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
    chain = _flows("header.converter = SimpleHeaderConverter\n")["a->b"].transforms
    assert chain.changes_records and chain.as_json() == {
        "transforms": [],
        "predicates": [],
        "header_converter": converter,
    }
    with pytest.raises(ConfigError) as refused:
        _flows("header.converter = org.apache.kafka.connect.json.JsonConverter\n")
    assert "header.converter" in str(refused.value)


@pytest.mark.parametrize(
    ("lines", "key", "words"),
    [
        ("transforms = x\n", "transforms", "transform x has no class (transforms.x.type"),
        (
            f"transforms = x, x\ntransforms.x.type = {SMT}Filter\n",
            "transforms",
            "x is listed twice",
        ),
        (
            f"transforms = x\ntransforms.x.type = {SMT}Filter\ntransforms.x.predicate = p\n",
            "transforms.x.predicate",
            "uses predicate 'p', which predicates does not list",
        ),
        (
            CHAIN.replace("negate = true", "negate = maybe"),
            "transforms.only.negate",
            "invalid value 'maybe'",
        ),
        (
            f"transforms = x\ntransforms.x.type = {SMT}NoSuchTransform\n",
            "transforms.x.type",
            f"class {SMT}NoSuchTransform not found",
        ),
        (
            f"transforms = r\ntransforms.r.type = {SMT}RegexRouter\n",
            "transforms.r.type",
            'transforms.r: Missing required configuration "regex"',
        ),
        (
            CHAIN + "predicates.marked.name =\n",
            "predicates.marked.name",
            "predicates.marked",
        ),
        (
            f"transforms = x\ntransforms.x.type = {SMT}predicates.HasHeaderKey\n",
            "transforms.x.type",
            "is not a Kafka Connect Transformation",
        ),
    ],
)
def test_mistakes_are_errors_naming_the_transform_and_the_key(
    tmp_path: Path, lines: str, key: str, words: str
) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(HEAD + lines)
    result = CliRunner().invoke(app, ["config", "check", "--offline", str(path)])
    assert result.exit_code == 2, result.output
    assert f": {key}: " in result.output and words in result.output, result.output
    assert "Traceback" not in result.output


def test_a_valid_chain_passes_the_check(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(HEAD + CHAIN)
    result = CliRunner().invoke(app, ["config", "check", "--offline", str(path)])
    assert result.exit_code == 0, result.output
    assert "transforms      tag (InsertHeader), only (Filter unless marked)" in result.output


def test_a_rejected_value_from_a_secret_is_not_shown(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(
        HEAD + f"transforms = r\ntransforms.r.type = {SMT}RegexRouter\n"
        "transforms.r.regex = ${env:ROUTE_REGEX}\ntransforms.r.replacement = x\n"
    )
    result = CliRunner().invoke(
        app, ["config", "check", "--offline", str(path)], env={"ROUTE_REGEX": "(s3cr3t"}
    )
    assert result.exit_code == 2, result.output
    assert "transforms.r.regex" in result.output and "[hidden]" in result.output
    assert "s3cr3t" not in result.output


def test_a_dropped_range_translates_to_the_next_copied_record() -> None:
    # Source offsets 10..19 read; a filter dropped 13..16, so 10..12 went to target 100..102
    # and 17..19 to 103..105: the writer reports two runs and counts four dropped.
    row = {
        "topic": "t",
        "partition": 0,
        "records": 6,
        "filtered": 0,
        "skipped": 0,
        "refused": 0,
        "dead_lettered": 0,
        "refusals": [],
        "first_seen": 10,
        "next_offset": 20,
        "bytes": 60,
        "first_offset": 10,
        "last_offset": 19,
        "first_target_offset": 100,
        "last_target_offset": 105,
        "min_timestamp": 0,
        "max_age_ms": 0,
        "dropped": 4,
        "routed": 0,
        "runs": [[10, 100, 3], [17, 103, 3]],
    }
    result = partition_result(row, lag_max=100)
    assert result.dropped == 4 and result.records == 6
    store = TranslationStore()
    store.add_syncs(("t", 0), result.syncs)
    translated = {u: store.translate(("t", 0), u, read_until=20).offset for u in range(10, 21)}
    # A group that committed anywhere in the dropped range resumes at the next copy, 103.
    assert translated == {
        10: 100, 11: 101, 12: 102, 13: 103, 14: 103, 15: 103, 16: 103,
        17: 103, 18: 104, 19: 105, 20: 106,
    }  # fmt: skip
