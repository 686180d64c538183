"""Does a replicated partition hold every source record, in order, and how often?

Records are told apart by a sequence number at the start of their value
(`b"<seq>:<anything>"`) and compared by a digest of key, value, headers and
timestamp, so that millions of records fit in a few arrays of integers.

A replica that a crashed and restarted replicator wrote at least once looks like
the source partition, except that each restart may go back to an earlier source
record and write again, in order, what was already there (a *re-read run*).
`audit_partition` checks exactly that shape: inside one start of the replicator
every record follows the previous one; only the first record of a later start
may go back; nothing is skipped; every copy has the content of its original.
A copy that a later start wrote again is charged to the start that wrote it:
that is what crashing that start cost.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_PROBLEMS = 10  # per partition: the first ones say what went wrong, the count says how often


def sequence_of(value: bytes | None) -> int:
    """The sequence number a test record carries at the start of its value; -1 if none."""
    if not value:
        return -1
    head = value.split(b":", 1)[0]
    return int(head) if head.isdigit() else -1


def content_digest(key, value, headers, timestamp: int) -> int:
    """A 64-bit digest of everything a replica must keep: key, value, headers, timestamp."""
    text = repr((key, value, tuple(tuple(h) for h in headers or ()), timestamp)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


@dataclass
class RecordLog:
    """One partition's records in offset order: offset, sequence number, content digest."""

    offsets: array = field(default_factory=lambda: array("q"))
    seqs: array = field(default_factory=lambda: array("q"))
    digests: array = field(default_factory=lambda: array("Q"))

    def append(self, offset: int, seq: int, digest: int) -> None:
        self.offsets.append(offset)
        self.seqs.append(seq)
        self.digests.append(digest)

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass
class PartitionAudit:
    partition: int
    records: int  # in the source partition
    replicated: int  # records read from the replica, duplicates included
    lost: int  # source records with no copy
    first_lost: int | None  # the source offset of the first of them
    # Per start of the replicator (index 0 the first, k the start after the
    # k-th crash): its copies that a later start wrote again. A crashed start's
    # re-written records are what it wrote after its last saved progress, so
    # this is what each crash cost; a start that was not crashed has none.
    duplicates: list[int]
    problems: list[str]


def audit_partition(
    partition: int, source: RecordLog, replica: RecordLog, restarts: Sequence[int]
) -> PartitionAudit:
    """Check `replica` against `source`.

    `restarts[k]` is the replica's end offset just before the replicator started
    for the (k+2)-th time (ascending): records from there on were written by
    that start. A replicator that is never restarted passes an empty list.
    """
    problems: list[str] = []
    extra = 0

    def problem(text: str) -> None:
        nonlocal extra
        if len(problems) < MAX_PROBLEMS:
            problems.append(f"partition {partition}: {text}")
        else:
            extra += 1

    index_of = {seq: i for i, seq in enumerate(source.seqs)}
    if len(index_of) != len(source):
        problem("the source holds records with the same sequence number; the test is broken")
    duplicates = [0] * (len(restarts) + 1)
    previous, previous_start = -1, 0
    for offset, seq, digest in zip(replica.offsets, replica.seqs, replica.digests, strict=True):
        start = bisect_right(restarts, offset)
        i = index_of.get(seq)
        if i is None:
            problem(f"replica offset {offset} is no source record (sequence number {seq})")
            continue
        if digest != source.digests[i]:
            problem(
                f"replica offset {offset} differs from its source record at offset "
                f"{source.offsets[i]} in key, value, headers or timestamp"
            )
        if i > previous + 1:
            skipped = source.offsets[previous + 1], source.offsets[i - 1]
            problem(
                f"replica offset {offset} holds source offset {source.offsets[i]}, but source "
                f"offsets {skipped[0]}..{skipped[1]} were skipped before it"
            )
        elif i <= previous and start == previous_start:
            problem(
                f"replica offset {offset} goes back to source offset {source.offsets[i]} "
                "although the replicator was not restarted there"
            )
        previous, previous_start = i, start
    # Backwards: a copy is superseded when a later copy of the same record exists.
    written_later = bytearray(len(source))  # by source index; in the end: copied at all
    for offset, seq in zip(reversed(replica.offsets), reversed(replica.seqs), strict=True):
        i = index_of.get(seq)
        if i is None:
            continue
        if written_later[i]:
            duplicates[bisect_right(restarts, offset)] += 1
        written_later[i] = 1
    if extra:
        problems.append(f"partition {partition}: ... and {extra} more problems")
    first_lost = written_later.find(0)
    return PartitionAudit(
        partition=partition,
        records=len(source),
        replicated=len(replica),
        lost=written_later.count(0),
        first_lost=source.offsets[first_lost] if first_lost >= 0 else None,
        duplicates=duplicates,
        problems=problems,
    )
