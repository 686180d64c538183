"""Which replicated records of a batch to publish as offset syncs.

The writer reports each partition's exact offset mapping as runs: maximal
stretches `(source start, target start, count)` in which both offsets advance by
one. Exact offset translation (see `docs/offset-translation.md`) needs, for every
partition and batch, syncs at:

- the first and the last replicated record of the batch, so that nothing
  between two batches is ever interpolated across;
- both records on either side of every discontinuity, in the source numbering
  (compaction, retention, aborted transactions, control markers) or in the target
  numbering (transaction markers, duplicates from an earlier attempt): these are
  the first and last records of the runs;
- at least every `offset.lag.max` records, so that a translation never has to
  look back further than that.

Between two consecutive syncs the mapping is then either one contiguous run
(both offsets advance together) or one discontinuity, and a committed source
offset U translates exactly to min(t_a + (U - s_a), t_b) for the syncs
(s_a, t_a) <= U < (s_b, t_b).
"""

from __future__ import annotations

from collections.abc import Iterable

Run = tuple[int, int, int]  # (source start, target start, records)


def sync_points_of_runs(runs: Iterable[Run], lag_max: int) -> list[tuple[int, int]]:
    """The (upstream, downstream) pairs to publish for one partition's batch, in order."""
    if lag_max < 1:
        raise ValueError(f"offset.lag.max must be at least 1, got {lag_max}")
    points: list[tuple[int, int]] = []
    for source, target, count in runs:
        points.extend((source + i, target + i) for i in range(0, count - 1, lag_max))
        points.append((source + count - 1, target + count - 1))
    return points
