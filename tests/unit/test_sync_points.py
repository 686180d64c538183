"""The offset-sync emission rule makes translation exact (checked by brute force)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support.offset_mapping import sync_points


def test_contiguous_batch_gets_first_and_last():
    assert sync_points(range(10, 20), range(100, 110), lag_max=100) == [(10, 100), (19, 109)]


def test_single_record():
    assert sync_points([5], [7], lag_max=100) == [(5, 7)]


def test_empty_batch():
    assert sync_points([], [], lag_max=100) == []


def test_both_sides_of_source_gap():
    assert sync_points([1, 2, 5, 6], [10, 11, 12, 13], lag_max=100) == [
        (1, 10),
        (2, 11),
        (5, 12),
        (6, 13),
    ]


def test_both_sides_of_target_gap():
    assert sync_points([1, 2, 3], [10, 11, 14], lag_max=100) == [(1, 10), (2, 11), (3, 14)]


def test_at_least_every_lag_max_records():
    points = sync_points(range(0, 1000), range(0, 1000), lag_max=100)
    ups = [u for u, _ in points]
    assert ups[0] == 0 and ups[-1] == 999
    assert max(b - a for a, b in zip(ups, ups[1:], strict=False)) <= 100


def test_lag_max_must_be_positive():
    with pytest.raises(ValueError, match="offset.lag.max"):
        sync_points([1], [1], lag_max=0)


def _translate(points: list[tuple[int, int]], committed: int) -> int:
    """The translation the syncs allow: min(t_a + (U - s_a), t_b)."""
    before = [p for p in points if p[0] <= committed]
    after = [p for p in points if p[0] >= committed]
    s_a, t_a = before[-1]
    if not after:
        return t_a + (committed - s_a)
    s_b, t_b = after[0]
    return min(t_a + (committed - s_a), t_b)


@st.composite
def replicated_batches(draw):
    """Strictly increasing source and target offsets with random gaps on both sides."""
    count = draw(st.integers(min_value=1, max_value=200))
    source_steps = draw(st.lists(st.sampled_from([1, 1, 1, 2, 5]), min_size=count, max_size=count))
    target_steps = draw(st.lists(st.sampled_from([1, 1, 1, 2, 3]), min_size=count, max_size=count))
    source, target, s, t = [], [], draw(st.integers(0, 50)), draw(st.integers(0, 50))
    for ds, dt in zip(source_steps, target_steps, strict=True):
        s, t = s + ds, t + dt
        source.append(s)
        target.append(t)
    return source, target, draw(st.integers(min_value=1, max_value=30))


@given(replicated_batches())
def test_every_committed_offset_translates_exactly(batch):
    source, target, lag_max = batch
    points = sync_points(source, target, lag_max)
    where = dict(zip(source, target, strict=True))
    for committed in range(source[0], source[-1] + 1):
        translated = _translate(points, committed)
        # The target records before T are exactly the replicated source records before U.
        assert {s for s, t in where.items() if t < translated} == {
            s for s in source if s < committed
        }, (committed, translated)
