"""The heap options of the JVMs that run a driver's flows: its size, its young generation.

Spark's own defaults size a heap for batch jobs that start, work and end. A
driver runs for weeks and moves records that live from a fetch to a delivery
report, so its heap is fixed at start (`fixed_heap`) and its young generation
sized and aged for those records (`young_generation`). How long a record lives
differs by mode: in micro-batches it may wait seconds for the next batch, in
real time milliseconds; so does the age at which survivors leave the young
generation (`TENURE_AFTER`, `TENURE_AFTER_REAL_TIME`).
"""

from __future__ import annotations

import re

from mirrorline import jvm

# The share of a JVM's heap kept for new objects: G1's own upper bound for it.
YOUNG_SHARE = 0.6
# Young collections an object survives before it moves to the old generation.
TENURE_AFTER = 4
# The same where a flow runs in real time: see `young_generation`.
TENURE_AFTER_REAL_TIME = 1


def fixed_heap(memory: str) -> list[str]:
    """Java options that give the driver's JVM its whole heap at start, touched.

    A driver runs for weeks. With only a maximum, G1 grows and shrinks the heap
    with the load (a broker restart's catch-up batches grew it by a third, for
    minutes), so the process's memory says little and moves under a container's
    limit. A heap of fixed size, its pages touched at start (as Elasticsearch and
    Cassandra run theirs), makes the footprint known from the first second and
    lets its growth mean a leak. Touching 2 GiB costs about 0.6 s of start-up.
    """
    return [f"-Xms{memory}", "-XX:+AlwaysPreTouch"]


def young_generation(memory: str, setting: str, real_time: bool = False) -> str:
    """The Java options for the young generation of a `memory` heap: its size,
    fixed at `YOUNG_SHARE`, and the age at which objects leave it.

    A record lives from the fetch that brought it until its delivery report, and
    the records a partition's consumer fetched past a batch's range wait for the
    next batch: seconds. G1 sizes its young generation for its 200-ms pause
    goal, here to a tenth of the heap or less, which fills in well under a
    second: most records then survive a collection or two, are copied each time
    and end in the old generation, which takes concurrent cycles to empty. With
    the young generation at 60 % of the heap they die young, in a few
    collections instead of dozens (see `benchmarks/RESULTS.md`).

    What survives more than a few collections is not a record but the session's
    own state, built while a query starts (about 50 MiB). G1 keeps copying it
    between survivor spaces until it is 15 collections old: every young pause
    of the first minutes took 37-87 ms instead of 3-9, which a real-time
    flow's records wait out (a collection every 20 s at 5,000 records/s of 1
    KiB: the first five minutes). After `TENURE_AFTER` collections it moves to
    the old generation once.

    In real time (`real_time`) a record lives milliseconds, from its fetch to
    its acknowledgement, and no record waits for a batch: what survives one
    collection is the session's state. With `TENURE_AFTER` it was still copied
    in the second and third minute of a stream (pauses of 41, 53 and 19 ms,
    then 3-8 ms), so there it leaves after `TENURE_AFTER_REAL_TIME`. The JVMs are
    the driver's, shared by its flows: one real-time flow sets it for all of them.
    `setting` names where `memory` came from, for the error if it is no memory size.
    """
    young = int(mebibytes(memory, setting) * YOUNG_SHARE)
    tenure = TENURE_AFTER_REAL_TIME if real_time else TENURE_AFTER
    return f"-Xmn{young}m -XX:MaxTenuringThreshold={tenure}"


def mebibytes(memory: str, setting: str) -> int:
    """Spark's memory notation (`2g`, `1536m`, `1t`; a bare number is MiB) in MiB."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)b?\s*", memory.lower())
    if not match:
        raise jvm.JvmSetupError(f"{setting} = {memory!r} is no memory size (e.g. 2g or 1536m)")
    number, unit = int(match.group(1)), match.group(2) or "m"
    return {"k": number // 1024, "m": number, "g": number << 10, "t": number << 20}[unit]
