"""The replication benchmark's workloads and the data they are made of.

Every contender of a workload gets its own source topic holding the same records
(same seed: same keys, values and partitions), pre-loaded just before it runs, so
each starts from the beginning of a topic no other run touched, with the data
freshly written for all alike.

Backlog values start with the record's position in its partition (8 bytes, big
endian): the last record on the target says how many arrived, even with
exactly-once, whose transaction markers take offsets too.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

SEQ_BYTES = 8
POOL_BYTES = 1 << 20


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str  # "backlog": pre-loaded, replicated from the start; "steady": a paced stream
    value_size: int  # bytes per value
    compression: str = "none"  # how the source topic's producer compresses
    compressible: bool = False  # text-like values instead of random bytes
    rate: int = 0  # records/s of a steady workload
    description: str = ""


WORKLOADS = {
    w.name: w
    for w in (
        Workload(
            "backlog_1k",
            "backlog",
            1024,
            description="a pre-loaded backlog of 1 KiB random values, replicated from the start",
        ),
        Workload(
            "backlog_100b",
            "backlog",
            100,
            description="the same with 100-byte values, where the cost per record shows",
        ),
        Workload(
            "backlog_lz4",
            "backlog",
            1024,
            compression="lz4",
            compressible=True,
            description="1 KiB text-like values written by an lz4-compressing producer "
            "(the replicators decompress and write uncompressed: compression.type = none)",
        ),
        Workload(
            "steady_5k",
            "steady",
            1024,
            rate=5000,
            description="an empty topic and a separate producer writing 5,000 records/s of "
            "1 KiB; a consumer on the target measures each record's age",
        ),
    )
}


def seq_of(value: bytes | None) -> int:
    """The position in its partition that a backlog value starts with."""
    if value is None or len(value) < SEQ_BYTES:
        return -1
    return int.from_bytes(value[:SEQ_BYTES], "big")


def _words_corpus(rng: random.Random, size: int) -> bytes:
    """Text of `size` bytes drawn from a small vocabulary: compresses like logs or JSON."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(400)]
    words = rng.choices(vocabulary, k=size // 4)
    return " ".join(words).encode()[:size]


def backlog_values(workload: Workload, partitions: int, seed: int = 1) -> Callable[[int], bytes]:
    """value(i) for record i (partition i % partitions): its position in the partition,
    then `value_size - 8` bytes of random or text-like data. Same seed, same values.

    The data is cut at random places out of 1 MiB made once (random bytes, or text
    of a small vocabulary), so pre-loading a million values costs well under a second.
    """
    rng = random.Random(seed)
    body = workload.value_size - SEQ_BYTES
    if body < 0:
        raise ValueError(f"{workload.name}: values must have at least {SEQ_BYTES} bytes")
    pool = _words_corpus(rng, POOL_BYTES) if workload.compressible else rng.randbytes(POOL_BYTES)
    span = len(pool) - body

    def value(i: int) -> bytes:
        start = rng.randrange(span)
        return (i // partitions).to_bytes(SEQ_BYTES, "big") + pool[start : start + body]

    return value
