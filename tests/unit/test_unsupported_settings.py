"""MM2 settings whose effect Mirrorline does not reproduce, and whose absence would change
what lands on the target, are errors (exit 2) naming each line, never silently ignored."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from mirrorline.cli.main import app

FILE = (
    "clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:2\n"
    "a->b.enabled = true\n"
)


def _check(tmp_path: Path, lines: str):
    path = tmp_path / "mm2.properties"
    path.write_text(FILE + lines)
    return CliRunner().invoke(app, ["config", "check", "--offline", str(path)])


def test_transforms_and_predicates_at_every_level_are_errors(tmp_path: Path) -> None:
    result = _check(
        tmp_path,
        "transforms = ins\n"
        "transforms.ins.type = org.apache.kafka.connect.transforms.InsertHeader\n"
        "a->b.predicates = p\n"
        "b.transforms = drop\n",
    )
    assert result.exit_code == 2, result.output
    assert "4 errors" in result.output
    for line, key in ((5, "transforms"), (6, "transforms.ins.type"), (7, "a->b.predicates")):
        assert f"mm2.properties:{line}: {key}: single message transforms are not supported yet" in (
            result.output
        )
    assert "mm2.properties:8: b.transforms:" in result.output
    assert "keep MirrorMaker 2 for the flows that need them" in result.output
    assert "Traceback" not in result.output


def test_a_converter_is_accepted_only_when_it_copies_bytes(tmp_path: Path) -> None:
    byte_array = "org.apache.kafka.connect.converters.ByteArrayConverter"
    accepted = _check(
        tmp_path, f"key.converter = {byte_array}\na->b.value.converter = {byte_array}\n"
    )
    assert accepted.exit_code == 0, accepted.output
    refused = _check(tmp_path, "value.converter = org.apache.kafka.connect.json.JsonConverter\n")
    assert refused.exit_code == 2, refused.output
    assert "mm2.properties:5: value.converter: org.apache.kafka.connect.json.JsonConverter" in (
        refused.output
    )
    assert f"set {byte_array}" in refused.output
