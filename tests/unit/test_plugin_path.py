"""`plugin.path`: which jars it names, and the errors for what it cannot use."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrorline.config.plugins import parse_plugin_path, plugin_jars


def _jar(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PK")
    return path


def test_jars_directly_and_one_directory_down(tmp_path: Path) -> None:
    top = _jar(tmp_path / "plugins" / "a.jar")
    nested = _jar(tmp_path / "plugins" / "smt" / "b.jar")
    _jar(tmp_path / "plugins" / "smt" / "deep" / "c.jar")  # two levels down: not a plugin
    single = _jar(tmp_path / "single.jar")
    found = parse_plugin_path(f"{tmp_path / 'plugins'}, {single}, {single}")
    assert found == (top.resolve(), nested.resolve(), single.resolve())


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("relative/dir", "is not an absolute path"),
        ("{tmp}/missing", "does not exist"),
        ("{tmp}/notes.txt", "is not a jar"),
        ("{tmp}/empty", "holds no jar"),
    ],
)
def test_unusable_entries_are_named(tmp_path: Path, entry: str, message: str) -> None:
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    text = entry.format(tmp=tmp_path)
    with pytest.raises(ValueError, match=message) as caught:
        parse_plugin_path(text)
    assert text in str(caught.value) or "relative" in text


def test_flows_share_jars_once(tmp_path: Path) -> None:
    a, b = _jar(tmp_path / "a.jar"), _jar(tmp_path / "b.jar")
    assert plugin_jars([(a, b), (b,), ()]) == (a, b)
