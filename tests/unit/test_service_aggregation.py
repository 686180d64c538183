"""Raw metrics in, window statistics and replication states out: the service's pure logic."""

from __future__ import annotations

import pytest

from mirrorline.engine.health import ClusterVerdict
from mirrorline.raw_metrics import (
    MAX_ENTRIES,
    BatchSample,
    CheckpointLatency,
    CheckpointSample,
    Origin,
    PartitionBatch,
    PartitionLag,
    StatusSample,
    decode,
    encode,
)
from mirrorline.service.aggregate import Part, Steps, aggregate
from mirrorline.service.history import FlowHistory
from mirrorline.service.replications import replication
from mirrorline.service.target_view import TargetView

NOW = 1_800_000_000_000  # a multiple of 5 minutes, in ms
FLOW = "a->b"


def _origin(time_ms: int, driver: str = "d1") -> Origin:
    return Origin(FLOW, "a", "b", driver, time_ms)


def _batch(time_ms: int, topic: str, partition: int, records: int, latency=(0, 0, 0, 0)):
    count, total, lowest, highest = latency
    entry = PartitionBatch(
        topic, f"a.{topic}", partition, records, 10 * records, count, total, lowest, highest
    )
    return BatchSample(_origin(time_ms), 1, (entry,))


def _status(time_ms: int, state="running", lags=(), driver="d1", interval_ms=5000, reason=""):
    return StatusSample(
        _origin(time_ms, driver),
        state=state,
        reason=reason,
        interval_ms=interval_ms,
        topics={"t": "a.t"},
        lag=tuple(PartitionLag(t, p, n) for t, p, n in lags),
    )


def _history(*samples) -> FlowHistory:
    history = FlowHistory(FLOW, "a", "b")
    for sample in samples:
        history.add(sample)
    return history


def test_every_kind_of_sample_survives_encoding_and_big_ones_are_split():
    samples = [
        _batch(NOW, "t", 0, 5, (5, 50, 1, 20)),
        _status(NOW, lags=[("t", 0, 3)], reason="why"),
        CheckpointSample(_origin(NOW), (CheckpointLatency("g", "t", "a.t", 0, 12),)),
    ]
    for sample in samples:
        [(key, value)] = list(encode(sample))
        assert key == b'{"flow":"a->b","version":1}'
        assert decode(value) == sample
    many = BatchSample(
        _origin(NOW), 7, tuple(PartitionBatch("t", "a.t", p, 1, 1) for p in range(MAX_ENTRIES + 1))
    )
    parts = [decode(v) for _, v in encode(many)]
    assert [len(p.partitions) for p in parts] == [MAX_ENTRIES, 1]  # type: ignore[union-attr]


def test_records_of_another_version_or_format_are_ignored():
    assert decode(b'{"version":2,"kind":"batch"}') is None
    assert decode(b"not json") is None
    assert decode(None) is None
    assert decode(b'{"version":1,"kind":"batch","flow":"a->b"}') is None  # fields missing


def test_steps_are_aligned_so_that_two_services_cut_the_same_window():
    steps = Steps.ending_at(NOW + 2_400, 300)
    assert (steps.step_s, steps.count) == (5, 60)
    assert steps.time_ms(59) == NOW  # the step holding `now` is the last one
    assert Steps.ending_at(NOW + 4_900, 300) == steps
    assert steps.index(NOW // 1000 - 300) is None  # before the window


def test_counts_and_rates_over_a_window():
    history = _history(
        _batch(NOW - 200_000, "t", 0, 100),
        _batch(NOW - 100_000, "t", 1, 50),
        _batch(NOW - 100_000, "u", 0, 7),
        _batch(NOW - 400_000, "t", 0, 1000),  # older than the window
    )
    count = aggregate("record-count", [Part(history, frozenset({"t"}))], 300, NOW)
    assert count.sum == 150 and count.max == 100 and count.min == 0
    assert len(count.points) == 60
    assert aggregate("byte-count", [Part(history)], 300, NOW).sum == 1570
    rate = aggregate("record-rate", [Part(history, frozenset({"t"}))], 300, NOW)
    assert rate.avg == pytest.approx(150 / 300)
    assert rate.max == pytest.approx(100 / 5)


def test_latency_statistics_are_over_the_records_not_the_batches():
    history = _history(
        _batch(NOW - 10_000, "t", 0, 10, (10, 1000, 50, 200)),
        _batch(NOW - 10_000, "t", 1, 30, (30, 900, 10, 40)),
        _batch(NOW - 60_000, "t", 0, 5, (0, 0, 0, 0)),  # no timestamps: no latency
    )
    latency = aggregate("replication-latency-ms", [Part(history)], 300, NOW)
    assert (latency.min, latency.max, latency.sum) == (10, 200, 1900)
    assert latency.avg == pytest.approx(1900 / 40)
    assert [p.value for p in latency.points] == [pytest.approx(1900 / 40)]
    empty = aggregate("replication-latency-ms", [Part(_history())], 300, NOW)
    assert (empty.min, empty.max, empty.avg, empty.sum, empty.points) == (None, None, None, 0, ())


def test_checkpoint_latency_per_topic():
    history = _history(
        CheckpointSample(
            _origin(NOW - 1_000),
            (
                CheckpointLatency("g1", "t", "a.t", 0, 30),
                CheckpointLatency("g2", "t", "a.t", 1, 10),
                CheckpointLatency("g1", "u", "a.u", 0, 99),
            ),
        )
    )
    latency = aggregate("checkpoint-latency-ms", [Part(history, frozenset({"t"}))], 60, NOW)
    assert (latency.min, latency.max, latency.avg) == (10, 30, 20)
    assert history.last_checkpoint_ms == NOW - 1_000


def test_lag_is_the_newest_per_partition_and_its_history_the_points():
    history = _history(
        _status(NOW - 20_000, lags=[("t", 0, 50), ("t", 1, 70), ("u", 0, 5)]),
        _status(NOW - 9_000, lags=[("t", 0, 0), ("t", 1, 4), ("u", 0, 1)]),
    )
    lag = aggregate("replication-records-lag", [Part(history, frozenset({"t"}))], 60, NOW)
    assert (lag.min, lag.max, lag.sum, lag.avg) == (0, 4, 4, 2)
    assert [p.value for p in lag.points] == [120, 4]
    flow = aggregate("replication-records-lag", [Part(history)], 60, NOW)
    assert flow.sum == 5
    # Two flows writing one downstream topic: their lags add up.
    other = FlowHistory("c->b", "c", "b")
    other.add(
        StatusSample(
            Origin("c->b", "c", "b", "d2", NOW - 9_000), "running", lag=(PartitionLag("t", 0, 6),)
        )
    )
    both = aggregate(
        "replication-records-lag", [Part(history, frozenset({"t"})), Part(other)], 60, NOW
    )
    assert both.sum == 10


def test_eviction_forgets_old_seconds_but_keeps_the_totals_and_the_newest_lag():
    history = _history(
        _batch(NOW - 7_200_000, "t", 0, 9),
        _status(NOW - 7_200_000, lags=[("t", 0, 3)]),
        _batch(NOW - 1_000, "t", 0, 1),
    )
    history.evict(NOW - 3_600_000)
    assert list(history.seconds["t"]) == [(NOW - 1_000) // 1000]
    assert history.totals["t"] == [10, 100]
    assert history.latest_lags() == {("t", 0): 3}


def test_the_leading_drivers_status_speaks_for_the_flow():
    history = _history(
        _status(NOW - 3_000, driver="leader"),
        _status(NOW - 1_000, state="standby", driver="other", reason="active driver: leader"),
    )
    assert history.current_status().origin.driver == "leader"  # type: ignore[union-attr]
    # The leader stops: so does the flow, until another driver says more.
    history.add(_status(NOW - 500, state="stopped", driver="leader"))
    assert history.current_status().state == "stopped"  # type: ignore[union-attr]
    history.add(_status(NOW, state="starting", driver="other"))
    assert history.current_status().origin.driver == "other"  # type: ignore[union-attr]


def _view(*samples, reachable=True) -> TargetView:
    view = TargetView("b")
    for sample in samples:
        view.add_sample(sample)
    view.mark_caught_up()
    if not reachable:
        view.set_verdict(ClusterVerdict("b", "target", False, "Connection refused"))
    return view


def test_replication_state_reason_and_health():
    fresh = _view(_status(NOW - 2_000))
    r = replication(fresh, FLOW, "a", NOW)
    assert (r.state, r.health, r.reason, r.active_driver) == ("running", "healthy", "", "d1")

    stale = replication(_view(_status(NOW - 60_000)), FLOW, "a", NOW)
    assert stale.state == "unknown" and stale.health == "unhealthy"
    assert (
        "no driver has reported for 60s" in stale.reason and "d1 reported running" in stale.reason
    )

    down = replication(_view(_status(NOW - 2_000), reachable=False), FLOW, "a", NOW)
    assert down.state == "degraded" and down.health == "unhealthy"
    assert down.reason.startswith("target cluster b does not answer the service: Connection")

    stopped = replication(_view(_status(NOW - 600_000, state="stopped")), FLOW, "a", NOW)
    assert (stopped.state, stopped.health) == ("stopped", "inactive")

    failed = replication(_view(_status(NOW, state="failed", reason="boom")), FLOW, "a", NOW)
    assert (failed.state, failed.health, failed.reason) == ("failed", "unhealthy", "boom")

    never = replication(_view(), FLOW, "a", NOW)
    assert never.state == "unknown" and "no driver has reported" in never.reason
