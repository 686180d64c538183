"""The driver's progress records, byte for byte (the JVM writer's tests pin the same bytes).

Exactly-once tasks write progress from the JVM (jvm/writer, ProgressRecordsTest)
and the driver from Python; compaction keeps one record per flow and partition
only if both write equal keys as equal bytes.
"""

from __future__ import annotations

import json

from mirrorline.engine.progress import progress_record
from mirrorline.formats import json_record


def test_key_is_sorted_compact_json():
    key, _ = progress_record("east->west", "orders", 3, 10)
    assert key == b'{"flow":"east->west","partition":3,"topic":"orders"}'


def test_text_is_escaped_as_the_writer_escapes_it():
    assert json_record({"t": 'café "q" \\ \n\x01\x7f'}) == (
        b'{"t":"caf\\u00e9 \\"q\\" \\\\ \\n\\u0001\\u007f"}'
    )


def test_value_holds_the_runs_of_an_exactly_once_batch():
    _, value = progress_record("f", "t", 0, 1500, [(1000, 40, 300), (1302, 340, 198)])
    decoded = json.loads(value)
    assert decoded["runs"] == [[1000, 40, 300], [1302, 340, 198]]
    assert list(decoded) == ["next_offset", "runs", "updated_ms", "version"]
    _, plain = progress_record("f", "t", 0, 7)
    assert "runs" not in json.loads(plain)
