"""Generated blocks in hand-written markdown: text between two marker comments is
replaced by a run, everything around it stays as written."""

from __future__ import annotations

from pathlib import Path

from benchlib.common import BenchmarkError


def replace_block(path: Path, start: str, end: str, content: str) -> None:
    """Put `content` between the markers `start` and `end` of `path`."""
    text = path.read_text()
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise BenchmarkError(f"{path} needs exactly one {start} followed by one {end}")
    before, rest = text.split(start, 1)
    after = rest.split(end, 1)[1]
    path.write_text(f"{before}{start}\n{content.strip()}\n{end}{after}")
