"""Files of a consumer group's offsets on one cluster: `mirrorline offsets` writes and reads them.

Two formats:

- **CSV**, exactly what Apache Kafka's `kafka-consumer-groups --reset-offsets
  --from-file` reads for one group: a `topic,partition,offset` line per
  partition, no header line, `\\n` line ends. The tool also reads
  `group,topic,partition,offset` lines (several groups in one file); Mirrorline
  reads those too and keeps the lines of the group it applies.
- **JSON**, for scripts: one object naming the group, the flow and when the
  offsets were exported, with each partition's upstream offset and commit
  metadata besides the offset. A file names the cluster its offsets belong to,
  so that applying it to another cluster is refused (an offset means nothing
  on a cluster whose log it was not read from).

Reading checks everything and reports every problem at once, each with the
file and line (CSV) or entry (JSON) it is about.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mirrorline.formats import Checkpoint

#: Version of the JSON document; readers refuse versions they do not know.
JSON_VERSION = 1

_CSV_FIELDS = ("topic", "partition", "offset")


@dataclass(frozen=True)
class GroupOffset:
    """One partition's offset for a consumer group, on the cluster the file is for."""

    topic: str
    partition: int
    offset: int
    upstream_offset: int | None = None  # the group's offset on the source cluster, if known
    metadata: str = ""
    by_timestamp: bool = False  # translated by timestamp, not exactly (data copied before)

    @classmethod
    def from_checkpoint(cls, checkpoint: Checkpoint) -> GroupOffset:
        return cls(
            checkpoint.topic,
            checkpoint.partition,
            checkpoint.downstream_offset,
            checkpoint.upstream_offset,
            checkpoint.metadata,
        )


class OffsetsFileError(ValueError):
    """An offsets file that cannot be used; `problems` lists every reason, each with its place."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


def to_csv(offsets: Iterable[GroupOffset]) -> str:
    """`topic,partition,offset` lines, sorted, as `kafka-consumer-groups` reads them."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for o in sorted(offsets, key=_position):
        writer.writerow([o.topic, o.partition, o.offset])
    return out.getvalue()


def to_json(
    offsets: Iterable[GroupOffset],
    *,
    group: str,
    source: str,
    target: str,
    generated: datetime,
) -> str:
    """The JSON document for `group`'s offsets on `target`, translated from `source`."""
    document = {
        "version": JSON_VERSION,
        "group": group,
        "source": source,
        "target": target,
        "generated": generated.isoformat(timespec="seconds"),
        "offsets": [
            {
                "topic": o.topic,
                "partition": o.partition,
                "offset": o.offset,
                "upstream_offset": o.upstream_offset,
                "metadata": o.metadata,
                **({"translated_by": "timestamp"} if o.by_timestamp else {}),
            }
            for o in sorted(offsets, key=_position)
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def read_offsets_file(path: Path, *, group: str, target: str) -> list[GroupOffset]:
    """The offsets of `group` for cluster `target` in the CSV or JSON file at `path`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OffsetsFileError([f"{path}: cannot read: {exc}"]) from None
    return parse_offsets(text, name=str(path), group=group, target=target)


def parse_offsets(text: str, *, name: str, group: str, target: str) -> list[GroupOffset]:
    """Parse an offsets file's text; the format is JSON when it starts with `{`, else CSV.

    `name` is what problems call the file. A JSON document must be for `group`
    and `target`; a CSV file says neither (`kafka-consumer-groups` applies it
    to the group it is told), except that four-field lines name their group.
    """
    if text.lstrip().startswith("{"):
        return _parse_json(text, name, group, target)
    return _parse_csv(text, name, group)


def _parse_csv(text: str, name: str, group: str) -> list[GroupOffset]:
    problems: list[str] = []
    offsets: list[GroupOffset] = []
    seen: dict[tuple[str, int], str] = {}
    other_groups: set[str] = set()
    first: tuple[int, int] | None = None  # (line, fields): every line has the first one's fields
    reader = csv.reader(io.StringIO(text))
    for row in reader:
        where = f"{name}:{reader.line_num}"
        fields = [field.strip() for field in row]
        if not any(fields):
            continue  # blank line
        if first is None and [f.lower() for f in fields[-3:]] == list(_CSV_FIELDS):
            problems.append(f"{where}: a header line; kafka-consumer-groups reads none, remove it")
            continue
        if len(fields) not in (3, 4):
            problems.append(
                f"{where}: expected topic,partition,offset (or group,topic,partition,offset), "
                f"found {len(fields)} fields"
            )
            continue
        if first is None:
            first = (reader.line_num, len(fields))
        elif len(fields) != first[1]:
            problems.append(
                f"{where}: {len(fields)} fields, but line {first[0]} has {first[1]} "
                "(every line has the same fields)"
            )
            continue
        if len(fields) == 4:
            line_group, fields = fields[0], fields[1:]
            if line_group != group:
                other_groups.add(line_group)
                continue
        raw = dict(zip(_CSV_FIELDS, fields, strict=True))
        entry = _entry(where, raw, problems)
        if entry is not None:
            _add(entry, where, offsets, seen, problems)
    if not problems and not offsets:
        if other_groups:
            listed = ", ".join(sorted(other_groups))
            problems.append(f"{name}: no offsets for group {group} (the file has: {listed})")
        else:
            problems.append(f"{name}: no offsets in the file")
    if problems:
        raise OffsetsFileError(problems)
    return offsets


def _parse_json(text: str, name: str, group: str, target: str) -> list[GroupOffset]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OffsetsFileError([f"{name}:{exc.lineno}: not valid JSON: {exc.msg}"]) from None
    if not isinstance(document, dict) or not isinstance(document.get("offsets"), list):
        raise OffsetsFileError([f"{name}: expected an object with an offsets list"])
    problems: list[str] = []
    version = document.get("version", JSON_VERSION)
    if version != JSON_VERSION:
        problems.append(f"{name}: version {version!r} is not one Mirrorline reads ({JSON_VERSION})")
    if document.get("group") != group:
        problems.append(f"{name}: offsets of group {document.get('group')!r}, not of {group}")
    if document.get("target") != target:
        problems.append(
            f"{name}: offsets for cluster {document.get('target')!r}, not {target} "
            "(an offset only means something on the cluster it was translated for)"
        )
    offsets: list[GroupOffset] = []
    seen: dict[tuple[str, int], str] = {}
    for index, item in enumerate(document["offsets"]):
        where = f"{name}: offsets[{index}]"
        if not isinstance(item, dict):
            problems.append(f"{where}: expected an object with topic, partition and offset")
            continue
        entry = _entry(where, item, problems)
        if entry is not None:
            _add(entry, where, offsets, seen, problems)
    if not problems and not offsets:
        problems.append(f"{name}: no offsets in the file")
    if problems:
        raise OffsetsFileError(problems)
    return offsets


def _entry(where: str, raw: dict[str, Any], problems: list[str]) -> GroupOffset | None:
    """The checked entry of `raw`, or None after adding what is wrong with it to `problems`."""
    found: list[str] = []
    topic = raw.get("topic")
    if not isinstance(topic, str) or not topic:
        found.append(f"topic must be a topic name, got {topic!r}")
    numbers: dict[str, int | None] = {}
    for field in ("partition", "offset", "upstream_offset"):
        value = raw.get(field)
        numbers[field] = _non_negative(value)
        optional = field == "upstream_offset" and value is None
        if numbers[field] is None and not optional:
            found.append(f"{field} must be a non-negative integer, got {value!r}")
    metadata = raw.get("metadata", "")
    if not isinstance(metadata, str):
        found.append(f"metadata must be a string, got {metadata!r}")
    partition, offset = numbers["partition"], numbers["offset"]
    if found or not isinstance(topic, str) or partition is None or offset is None:
        problems.append(f"{where}: {'; '.join(found)}")
        return None
    return GroupOffset(topic, partition, offset, numbers["upstream_offset"], metadata)


def _non_negative(value: Any) -> int | None:
    """`value` as a non-negative Kafka offset or partition (a number or CSV text), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    return value if isinstance(value, int) and 0 <= value < 2**63 else None


def _add(
    entry: GroupOffset,
    where: str,
    offsets: list[GroupOffset],
    seen: dict[tuple[str, int], str],
    problems: list[str],
) -> None:
    key = (entry.topic, entry.partition)
    if key in seen:
        problems.append(
            f"{where}: {entry.topic} partition {entry.partition} is already given at {seen[key]}"
        )
        return
    seen[key] = where
    offsets.append(entry)


def _position(offset: GroupOffset) -> tuple[str, int]:
    return (offset.topic, offset.partition)
