"""The Java properties grammar, as MirrorMaker 2 files use it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorline.config.errors import ConfigError
from mirrorline.config.properties import parse_properties, read_properties


def entries(text: str) -> list[tuple[str, str, int]]:
    return [(p.key, p.value, p.origin.line) for p in parse_properties(text, source="t.properties")]


def test_separators_equals_colon_and_whitespace() -> None:
    text = "a=1\nb: 2\nc 3\nd   =   4\ne\t:\t5\n"
    assert entries(text) == [
        ("a", "1", 1),
        ("b", "2", 2),
        ("c", "3", 3),
        ("d", "4", 4),
        ("e", "5", 5),
    ]


def test_comments_and_blank_lines_are_skipped_and_lines_are_counted() -> None:
    text = "# comment\n! also a comment\n\n   \nclusters = A, B\n  # indented comment\nx=y\n"
    assert entries(text) == [("clusters", "A, B", 5), ("x", "y", 7)]


def test_continuation_lines_join_and_keep_the_first_line_number() -> None:
    text = "topics = a, \\\n         b, \\\n         c\nnext = 1\n"
    assert entries(text) == [("topics", "a, b, c", 1), ("next", "1", 4)]


def test_even_number_of_backslashes_does_not_continue() -> None:
    text = "path = C:\\\\\nnext = 1\n"
    assert entries(text) == [("path", "C:\\", 1), ("next", "1", 2)]


def test_comment_line_ending_in_backslash_does_not_continue() -> None:
    assert entries("# note \\\nkey = v\n") == [("key", "v", 2)]


def test_escapes_in_keys_and_values() -> None:
    text = "a\\=b = x\\ty\nc\\:d : \\u0041\\u00e9\nplain\\q = \\#not-a-comment\n"
    assert entries(text) == [("a=b", "x\ty", 1), ("c:d", "Aé", 2), ("plainq", "#not-a-comment", 3)]


def test_value_may_contain_separators_and_arrows() -> None:
    text = 'A->B.enabled = true\nA.sasl.jaas.config = x required username="u";\n'
    assert entries(text) == [
        ("A->B.enabled", "true", 1),
        ("A.sasl.jaas.config", 'x required username="u";', 2),
    ]


def test_key_without_value() -> None:
    assert entries("lonely\nempty =\n") == [("lonely", "", 1), ("empty", "", 2)]


def test_windows_and_old_mac_line_endings() -> None:
    assert entries("a=1\r\nb=2\rc=3") == [("a", "1", 1), ("b", "2", 2), ("c", "3", 3)]


def test_duplicates_are_kept_in_order() -> None:
    assert entries("a=1\na=2\n") == [("a", "1", 1), ("a", "2", 2)]


def test_malformed_unicode_escape_is_reported_with_line_and_key() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_properties("ok=1\nbad = \\u12G4\nalso\\u1 = 2\n", source="t.properties")
    messages = [str(i) for i in caught.value.issues]
    assert len(messages) == 2
    assert messages[0].startswith("t.properties:2: bad: malformed \\uXXXX escape")
    assert messages[1].startswith("t.properties:3: malformed")


def test_origin_remembers_file_line_and_key(tmp_path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text("clusters = A\n\nA.bootstrap.servers = a:9092\n", encoding="utf-8")
    props = read_properties(path)
    assert str(props[1].origin) == f"{path}:3 (A.bootstrap.servers)"


def test_unreadable_file_is_a_config_error(tmp_path) -> None:
    with pytest.raises(ConfigError) as caught:
        read_properties(tmp_path / "missing.properties")
    assert "cannot read the configuration file" in str(caught.value)


def test_latin1_file_is_still_read(tmp_path) -> None:
    path = tmp_path / "latin.properties"
    path.write_bytes("name = caf\xe9\n".encode("latin-1"))
    assert read_properties(path)[0].value == "café"


_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


def _escape(text: str, *, key: bool) -> str:
    """Escape like java.util.Properties.store: separators, comments, controls, non-ASCII."""
    out = []
    for index, char in enumerate(text):
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char == " " and (key or index == 0):
            out.append("\\ ")
        elif char in "=:#!":
            out.append("\\" + char)
        elif not " " <= char <= "~":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


BMP_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0xFFFF), max_size=30
)


@given(pairs=st.lists(st.tuples(BMP_TEXT.filter(bool), BMP_TEXT), max_size=8))
def test_stored_properties_parse_back_to_the_same_entries(pairs: list[tuple[str, str]]) -> None:
    text = "".join(f"{_escape(k, key=True)} = {_escape(v, key=False)}\n" for k, v in pairs)
    parsed = parse_properties(text)
    assert [(p.key, p.value) for p in parsed] == pairs
    assert [p.origin.line for p in parsed] == list(range(1, len(pairs) + 1))
