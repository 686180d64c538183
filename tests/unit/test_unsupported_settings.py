"""MM2 settings whose effect Mirrorline does not reproduce, and whose absence would change
what lands on the target, are errors (exit 2) naming each line, never silently ignored.
(Single message transforms are applied: tests/unit/test_transforms_config.py.)"""

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
