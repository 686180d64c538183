"""Mirrorline's MM2-format records are read and written by MM2's own Java classes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from mirrorline import jvm
from mirrorline.formats import Checkpoint, Heartbeat, OffsetSync

PROGRAM = Path(__file__).parent.parent / "support" / "java" / "Mm2Formats.java"

SYNCS = [OffsetSync("orders", 0, 0, 0), OffsetSync("east.ünïcode-topic", 7, 2**40, 123_456_789)]
CHECKPOINTS = [
    Checkpoint("billing", "east.orders", 2, 1000, 998, ""),
    Checkpoint("grüppe", "t", 0, 5, 5, "metadata with spaces"),
]
HEARTBEATS = [Heartbeat("east", "west", 1_700_000_000_123)]


def _java(lines: list[str]) -> list[str]:
    result = subprocess.run(
        [jvm.java_executable(), "-cp", jvm.classpath("mirrormaker"), str(PROGRAM)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_mm2_decodes_what_mirrorline_writes():
    lines = [f"decode\toffset-sync\t{s.key().hex()}\t{s.value().hex()}" for s in SYNCS]
    lines += [f"decode\tcheckpoint\t{c.key().hex()}\t{c.value().hex()}" for c in CHECKPOINTS]
    lines += [f"decode\theartbeat\t{h.key().hex()}\t{h.value().hex()}" for h in HEARTBEATS]

    decoded = _java(lines)

    expected = [
        f"{s.topic}\t{s.partition}\t{s.upstream_offset}\t{s.downstream_offset}" for s in SYNCS
    ]
    expected += [
        f"{c.group}\t{c.topic}\t{c.partition}\t{c.upstream_offset}\t{c.downstream_offset}\t{c.metadata}"
        for c in CHECKPOINTS
    ]
    expected += [f"{h.source_alias}\t{h.target_alias}\t{h.timestamp}" for h in HEARTBEATS]
    assert decoded == expected


def test_mirrorline_decodes_what_mm2_writes():
    lines = [
        f"encode-offset-sync\t{s.topic}\t{s.partition}\t{s.upstream_offset}\t{s.downstream_offset}"
        for s in SYNCS
    ]
    lines += [
        f"encode-checkpoint\t{c.group}\t{c.topic}\t{c.partition}\t{c.upstream_offset}"
        f"\t{c.downstream_offset}\t{c.metadata}"
        for c in CHECKPOINTS
    ]
    lines += [
        f"encode-heartbeat\t{h.source_alias}\t{h.target_alias}\t{h.timestamp}" for h in HEARTBEATS
    ]

    encoded = [tuple(bytes.fromhex(part) for part in line.split(" ")) for line in _java(lines)]

    n, m = len(SYNCS), len(CHECKPOINTS)
    assert [OffsetSync.decode(k, v) for k, v in encoded[:n]] == SYNCS
    assert [Checkpoint.decode(k, v) for k, v in encoded[n : n + m]] == CHECKPOINTS
    assert [Heartbeat.decode(k, v) for k, v in encoded[n + m :]] == HEARTBEATS
    # Byte for byte the same as Mirrorline's own encoding.
    ours = [(r.key(), r.value()) for r in [*SYNCS, *CHECKPOINTS, *HEARTBEATS]]
    assert encoded == ours
