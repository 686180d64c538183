"""Offset mappings given record by record, as tests state them.

The writer reports its mapping as runs (`PartitionLog.runs` in `jvm/writer`);
tests write mappings out record by record and turn them into runs here, then
into syncs with the product's own rule (`engine.sync_points`).
"""

from __future__ import annotations

from collections.abc import Sequence

from mirrorline.engine.sync_points import Run, sync_points_of_runs


def runs_of(source_offsets: Sequence[int], target_offsets: Sequence[int]) -> list[Run]:
    """The runs of a mapping given record by record (`source[i]` was written at `target[i]`)."""
    if len(source_offsets) != len(target_offsets):
        raise ValueError("source and target offsets differ in length")
    runs: list[Run] = []
    start = 0
    count = len(source_offsets)
    for i in range(1, count + 1):
        if (
            i == count
            or source_offsets[i] - source_offsets[i - 1] != 1
            or target_offsets[i] - target_offsets[i - 1] != 1
        ):
            runs.append((source_offsets[start], target_offsets[start], i - start))
            start = i
    return runs


def sync_points(
    source_offsets: Sequence[int], target_offsets: Sequence[int], lag_max: int
) -> list[tuple[int, int]]:
    """`sync_points_of_runs` for a mapping given record by record; both sides increase."""
    return sync_points_of_runs(runs_of(source_offsets, target_offsets), lag_max)
