"""Reading Java `.properties` text while remembering where every entry was written.

MirrorMaker 2 reads its configuration with `java.util.Properties`, so Mirrorline
follows the same grammar, and users can keep their existing files:

* a *natural line* ends at `\\n`, `\\r` or `\\r\\n`; leading spaces, tabs and
  form feeds are skipped;
* a line whose first non-blank character is `#` or `!` is a comment;
* a line ending with an odd number of backslashes continues on the next line
  (the continuation's leading blanks are skipped); a comment never continues;
* the key ends at the first unescaped `=`, `:` or blank; blanks around the
  separator are skipped, and the rest of the line is the value;
* `\\t`, `\\n`, `\\r`, `\\f` and `\\uXXXX` are escapes, and a backslash before any
  other character stands for that character.

Unlike `java.util.Properties`, the parser keeps the line on which each logical
line starts, so every later message can point at `file:line`, and it keeps
every occurrence of a key: deciding what a repeated key means is the caller's
job (Java keeps the last one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mirrorline.config.errors import ConfigError, ConfigIssue
from mirrorline.config.origin import Origin

__all__ = ["Property", "parse_properties", "read_properties"]

_BLANKS = " \t\f"
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


@dataclass(frozen=True)
class Property:
    """One `key = value` entry and the place it was written."""

    key: str
    value: str
    origin: Origin


def read_properties(path: str | Path, issues: list[ConfigIssue] | None = None) -> list[Property]:
    """Read a properties file; see `parse_properties` for `issues`.

    A file that cannot be read always raises `ConfigError`.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            [
                ConfigIssue(
                    f"cannot read the configuration file {path}: {reason}",
                    hint="check the path and the file's permissions",
                )
            ]
        ) from None
    return parse_properties(_decode(data), source=str(path), issues=issues)


def parse_properties(
    text: str, *, source: str = "<text>", issues: list[ConfigIssue] | None = None
) -> list[Property]:
    """Parse properties text into entries, in file order, duplicates included.

    `source` names the text in origins and messages (usually the file path).
    Malformed lines are left out and reported: appended to `issues` when a
    list is given (so a caller can report them with its own findings),
    otherwise raised all at once in one `ConfigError`.
    """
    entries: list[Property] = []
    problems: list[ConfigIssue] = []
    for line_no, logical in _logical_lines(text):
        raw_key, raw_value = _split_entry(logical)
        try:
            key = _unescape(raw_key)
        except ValueError as exc:
            problems.append(_escape_issue(str(exc), Origin(source, line_no)))
            continue
        origin = Origin(source, line_no, key)
        try:
            value = _unescape(raw_value)
        except ValueError as exc:
            problems.append(_escape_issue(str(exc), origin))
            continue
        entries.append(Property(key, value, origin))
    if issues is not None:
        issues.extend(problems)
    elif problems:
        raise ConfigError(problems)
    return entries


def _escape_issue(message: str, origin: Origin) -> ConfigIssue:
    return ConfigIssue(
        message, origin=origin, hint="write \\uXXXX with exactly four hexadecimal digits"
    )


def _decode(data: bytes) -> str:
    # Java's Properties.load(InputStream) reads ISO-8859-1, but files written
    # today are UTF-8; UTF-8 first keeps both kinds readable.
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _natural_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _ends_with_odd_backslashes(line: str) -> bool:
    count = len(line) - len(line.rstrip("\\"))
    return count % 2 == 1


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continued lines; return (first line number, logical line) pairs."""
    result: list[tuple[int, str]] = []
    lines = _natural_lines(text)
    index = 0
    while index < len(lines):
        start = index
        line = lines[index].lstrip(_BLANKS)
        index += 1
        if not line or line[0] in "#!":
            continue
        while _ends_with_odd_backslashes(line):
            line = line[:-1]
            if index >= len(lines):
                break
            line += lines[index].lstrip(_BLANKS)
            index += 1
        result.append((start + 1, line))
    return result


def _split_entry(line: str) -> tuple[str, str]:
    """Split one logical line into its key and value, both still escaped."""
    pos = 0
    length = len(line)
    while pos < length:
        char = line[pos]
        if char == "\\":
            pos += 2
            continue
        if char in "=:" or char in _BLANKS:
            break
        pos += 1
    raw_key = line[: min(pos, length)]
    rest = line[min(pos, length) :]
    rest = rest.lstrip(_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return raw_key, rest


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char != "\\":
            out.append(char)
            pos += 1
            continue
        if pos + 1 >= len(text):
            # A lone trailing backslash (end of file after a continuation) means nothing.
            break
        escaped = text[pos + 1]
        if escaped == "u":
            digits = text[pos + 2 : pos + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                # The text is not quoted: it may be part of a secret.
                raise ValueError("malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            pos += 6
            continue
        out.append(_SIMPLE_ESCAPES.get(escaped, escaped))
        pos += 2
    return "".join(out)
