"""Which source offsets a verification checks, per partition, and what it leaves out.

The range asked for is `[since, until)` in time, resolved per partition with
offsetsForTimes (the first record at or after the time; the log end when
there is none), or by default the whole source log. Within it:

- offsets at or past the flow's saved progress are **not yet copied**: the
  flow has not read them, so their absence on the target is no loss;
- offsets before the flow's first run are **not covered by an exact
  mapping**: data copied before the flow copied anything (MirrorMaker 2's
  copy the flow took over, or none at all if the flow started later) has no
  record-by-record mapping, so it is counted, never compared. When the flow
  took over from MirrorMaker 2, MM2's offset syncs are its first runs where
  they were in line: those records are compared, and the ones between syncs
  that were not in line (below `predecessor_end`, MM2's last committed offset
  plus one) are counted as not covered as well (`compare`). A partition MM2
  never committed has no such bound (MM2's syncs cannot be told from the
  flow's own in the offset-syncs topic they share);
- the offsets between are checked (`compare`).

Counts here are offsets: compaction can leave fewer records than offsets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from mirrorline.control.translation import Run

_DURATION = re.compile(r"(\d+)\s*(s|m|h|d)")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(frozen=True)
class PartitionPlan:
    """What is checked of one source partition."""

    topic: str
    partition: int
    remote_topic: str
    runs: tuple[Run, ...]
    start: int  # first source offset checked
    end: int  # one past the last source offset checked
    not_yet_copied: int
    not_covered: int
    predecessor_end: int = 0  # source offsets below it were copied by MirrorMaker 2


def parse_when(text: str, now_ms: int) -> int:
    """`--since`/`--until`: ISO-8601 with a zone, epoch milliseconds, or a duration ago
    (`90s`, `15m`, `1h`, `2d`); epoch milliseconds. `ValueError` says what is accepted."""
    value = text.strip()
    match = _DURATION.fullmatch(value.lower())
    if match is not None:
        return now_ms - int(match.group(1)) * _UNIT_MS[match.group(2)]
    if value.isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            "expected an ISO-8601 time with a zone (2024-05-01T08:00:00Z), epoch "
            "milliseconds, or a duration ago such as 30m, 1h or 2d"
        ) from None
    if moment.tzinfo is None:
        raise ValueError("the time needs a zone, e.g. 2024-05-01T08:00:00Z")
    return int(moment.timestamp() * 1000)


def plan_partition(
    topic: str,
    partition: int,
    remote_topic: str,
    runs: Sequence[Run],
    *,
    progress: int | None,
    log_start: int,
    log_end: int,
    since: int | None = None,
    until: int | None = None,
    predecessor_end: int = 0,
) -> PartitionPlan:
    """The checked range of one partition; `since`/`until` are offsets resolved from times."""
    low = max(log_start, since if since is not None else log_start)
    high = min(log_end, until if until is not None else log_end)
    high = max(low, high)
    reached = low if progress is None else min(max(progress, low), high)
    not_yet_copied = high - reached
    covered_from = runs[0].upstream if runs else reached
    start = min(max(low, covered_from), reached)
    return PartitionPlan(
        topic,
        partition,
        remote_topic,
        tuple(runs),
        start,
        reached,
        not_yet_copied,
        start - low,
        predecessor_end,
    )
