"""Which replicated records of a batch to publish as offset syncs.

Exact offset translation (see `docs/offset-translation.md`) needs, for every
partition and batch, syncs at:

- the first and the last replicated record of the batch, so that nothing
  between two batches is ever interpolated across;
- both records on either side of every discontinuity, in the source numbering
  (compaction, retention, aborted transactions, control markers) or in the target
  numbering (transaction markers, duplicates from an earlier attempt);
- at least every `offset.lag.max` records, so that a translation never has to
  look back further than that.

Between two consecutive syncs the mapping is then either one contiguous run
(both offsets advance together) or one discontinuity, and a committed source
offset U translates exactly to min(t_a + (U - s_a), t_b) for the syncs
(s_a, t_a) <= U < (s_b, t_b).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def sync_points(
    source_offsets: Sequence[int] | np.ndarray,
    target_offsets: Sequence[int] | np.ndarray,
    lag_max: int,
) -> list[tuple[int, int]]:
    """The (upstream, downstream) pairs to publish for one partition's batch, in order.

    `source_offsets[i]` was written at `target_offsets[i]`; both increase strictly.
    """
    if lag_max < 1:
        raise ValueError(f"offset.lag.max must be at least 1, got {lag_max}")
    source = np.asarray(source_offsets, dtype=np.int64)
    target = np.asarray(target_offsets, dtype=np.int64)
    if source.shape != target.shape:
        raise ValueError("source and target offsets differ in length")
    count = len(source)
    if count == 0:
        return []
    jumps = np.flatnonzero((np.diff(source) != 1) | (np.diff(target) != 1)) + 1
    marks = np.unique(np.concatenate(([0, count - 1], jumps - 1, jumps)))
    # Fill stretches longer than lag_max with evenly spaced extra marks.
    spans = np.diff(marks)
    extra = [
        np.arange(start + lag_max, start + span, lag_max)
        for start, span in zip(marks[:-1], spans, strict=True)
        if span > lag_max
    ]
    if extra:
        marks = np.unique(np.concatenate([marks, *extra]))
    return list(zip(source[marks].tolist(), target[marks].tolist(), strict=True))
