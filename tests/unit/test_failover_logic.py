"""The failover's pure rules: lag, loss window, delta checks, group translation, pre-flight."""

from __future__ import annotations

from dataclasses import replace

from mirrorline.control.translation import Translation
from mirrorline.failover.delta import check_delta
from mirrorline.failover.groups import (
    VIA_CHECKPOINT,
    VIA_RUNS,
    VIA_TIMESTAMP,
    latest_checkpoints,
    translate_group,
)
from mirrorline.failover.lag import lag_of
from mirrorline.failover.loss import loss_window
from mirrorline.failover.preflight import FlowFacts, evaluate
from mirrorline.formats import Checkpoint
from mirrorline.group_offsets import OffsetAndMetadata
from mirrorline.service.replications import Replication

# -- lag ---------------------------------------------------------------------------------


def test_lag_is_the_high_watermark_minus_the_flows_next_offset():
    ends = {("t", 0): 100, ("t", 1): 50, ("t", 2): 30}
    progress = {("t", 0): 100, ("t", 1): 45}
    # Partition 2 has no progress: the flow starts at its log start.
    assert lag_of(ends, progress, {("t", 2): 10}) == {("t", 0): 0, ("t", 1): 5, ("t", 2): 20}
    assert lag_of({("t", 0): 5}, {("t", 0): 9}) == {("t", 0): 0}


# -- loss window -------------------------------------------------------------------------


def test_the_loss_window_is_the_age_of_the_newest_replicated_record_per_topic():
    topics = {"orders": "east.orders", "empty": "east.empty"}
    newest = {("east.orders", 0): 1_000, ("east.orders", 1): 4_000, ("east.empty", 0): None}
    [empty, orders] = loss_window(topics, {"orders": 2, "empty": 1}, newest, now_ms=10_000)
    assert (orders.topic, orders.remote_topic, orders.newest_ms) == ("orders", "east.orders", 4_000)
    assert orders.age_s == 6.0
    assert [p.newest_ms for p in orders.partitions] == [1_000, 4_000]
    assert orders.not_replicated is None  # the source did not answer
    assert empty.newest_ms is None and empty.age_s is None


def test_the_loss_window_counts_unreplicated_records_when_the_source_answers():
    [orders] = loss_window(
        {"orders": "orders"},
        {"orders": 3},
        {("orders", 0): 5},
        now_ms=5,
        not_replicated={("orders", 0): 4, ("orders", 2): 1},
    )
    assert orders.not_replicated == 5
    assert [p.not_replicated for p in orders.partitions] == [4, 0, 1]
    assert orders.to_dict()["window_s"] == 0.0


# -- delta -------------------------------------------------------------------------------


def test_the_delta_starts_at_the_recorded_offset_while_the_target_still_holds_it():
    recorded = {("orders", 0): 40, ("orders", 1): 40, ("orders", 2): 40}
    starts = {("orders", 0): 0, ("orders", 1): 40, ("orders", 2): 41}
    ends = {("orders", 0): 50, ("orders", 1): 40, ("orders", 2): 60, ("orders", 3): 7}
    checks = {(c.topic, c.partition): c for c in check_delta(recorded, starts, ends)}
    assert checks[("orders", 0)].start == 40 and checks[("orders", 0)].delta == 10
    assert checks[("orders", 1)].start == 40 and checks[("orders", 1)].delta == 0
    gone = checks[("orders", 2)]
    assert not gone.ok and gone.delta is None
    assert gone.reason() == (
        "orders[2]: the log starts at 41, past the offset 40 recorded at failover: "
        "records 40 to 40 are gone"
    )
    # A partition created after the failover: everything on it is the delta.
    assert checks[("orders", 3)].recorded == 0 and checks[("orders", 3)].delta == 7


def test_a_full_resync_starts_every_partition_at_its_log_start():
    checks = check_delta({("t", 0): 40}, {("t", 0): 41}, {("t", 0): 60}, full_resync=True)
    assert [(c.start, c.delta) for c in checks] == [(41, 19)]


def test_a_log_that_ends_before_the_recorded_offset_was_made_again():
    [check] = check_delta({("t", 0): 40}, {("t", 0): 0}, {("t", 0): 5})
    assert not check.ok and "was the topic deleted and created again?" in check.reason()


# -- group translation -------------------------------------------------------------------

NAMES = {"orders": "east.orders", "west.payments": "payments"}


def _committed(**offsets: int) -> dict[tuple[str, int], OffsetAndMetadata]:
    return {(t, 0): OffsetAndMetadata(o, "m") for t, o in offsets.items()}


def test_only_a_checkpoint_of_the_committed_offset_translates_it():
    checkpoints = {("g", "east.orders", 0): Checkpoint("g", "east.orders", 0, 100, 97, "m")}
    [found] = translate_group("g", _committed(orders=100), NAMES, checkpoints)
    assert (found.target_topic, found.offset, found.via) == ("east.orders", 97, VIA_CHECKPOINT)
    [waiting] = translate_group("g", _committed(orders=120), NAMES, checkpoints)
    assert waiting.offset is None
    assert waiting.reason == "the latest checkpoint is of offset 100, the group committed 120"


def test_a_checkpoint_before_the_flows_runs_is_said_to_be_by_timestamp():
    checkpoints = {("g", "east.orders", 0): Checkpoint("g", "east.orders", 0, 100, 97, "m")}

    def before_runs(tp, offset):
        return tp == ("orders", 0) and offset < 500

    [found] = translate_group("g", _committed(orders=100), NAMES, checkpoints, None, before_runs)
    assert (found.offset, found.via) == (97, VIA_TIMESTAMP)


def test_offset_runs_translate_what_no_checkpoint_will():
    def runs(tp, committed):
        return Translation(7) if tp == ("west.payments", 0) else Translation(None, "no syncs")

    found = translate_group(
        "g", _committed(**{"west.payments": 9, "orders": 3, "other": 1}), NAMES, {}, runs
    )
    by_topic = {f.topic: f for f in found}
    assert set(by_topic) == {"west.payments", "orders"}  # `other` is not replicated
    assert (by_topic["west.payments"].offset, by_topic["west.payments"].via) == (7, VIA_RUNS)
    assert by_topic["west.payments"].target_topic == "payments"
    assert by_topic["orders"].reason == "no checkpoint yet (offset runs: no syncs)"


def test_unplanned_takes_the_latest_checkpoints_as_they_are():
    checkpoints = {
        ("g", "east.orders", 1): Checkpoint("g", "east.orders", 1, 10, 8, ""),
        ("g", "east.orders", 0): Checkpoint("g", "east.orders", 0, 5, -1, ""),  # no offset
        ("h", "east.orders", 0): Checkpoint("h", "east.orders", 0, 5, 5, ""),
    }
    [only] = latest_checkpoints("g", checkpoints, {"east.orders": "orders"})
    assert (only.topic, only.partition, only.committed, only.offset) == ("orders", 1, 10, 8)


# -- pre-flight --------------------------------------------------------------------------

RUNNING = Replication(
    "east", "west", "running", "healthy", "", active_driver="d@h:1", last_checkpoint_ms=9_000
)
FACTS = FlowFacts(
    flow="east->west",
    enabled=True,
    config_file="mm2.properties",
    wanted_state="running",
    replication=RUNNING,
    groups=("billing",),
    checkpoints_enabled=True,
    checkpoint_interval_s=60,
    refresh_interval_s=600,
    selected={"orders": 3},
    published={"orders": "east.orders"},
    target_partitions={"east.orders": 3},
    now_ms=10_000,
)


def _verdicts(facts: FlowFacts) -> dict[str, str]:
    return {c.name: c.verdict for c in evaluate(facts)}


def test_a_healthy_flow_passes_every_check():
    assert set(_verdicts(FACTS).values()) == {"ok"}


def test_a_disabled_stopped_or_driverless_flow_fails():
    assert _verdicts(replace(FACTS, enabled=False))["flow enabled"] == "failed"
    assert _verdicts(replace(FACTS, wanted_state="paused"))["flow enabled"] == "failed"
    assert _verdicts(replace(FACTS, replication=None))["driver"] == "failed"
    standby = replace(RUNNING, state="standby", active_driver=None, reason="no leader")
    [driver] = [c for c in evaluate(replace(FACTS, replication=standby)) if c.name == "driver"]
    assert driver.failed and "standby (no leader)" in driver.detail


def test_what_is_stale_is_a_warning_naming_it():
    stale = replace(
        FACTS,
        selected={"orders": 4, "refunds": 1},
        replication=replace(RUNNING, problems=("topic config sync failed: timed out",)),
        now_ms=200_000,
    )
    checks = {c.name: c for c in evaluate(stale)}
    assert checks["topic refresh"].verdict == "warning"
    assert "refunds" in checks["topic refresh"].detail
    assert "east.orders (3 of 4)" in checks["topic refresh"].detail
    assert checks["control loops"].verdict == "warning"
    assert "topic config sync failed" in checks["control loops"].detail
    assert checks["checkpoints"].verdict == "warning" and "191s old" in checks["checkpoints"].detail
    assert not any(c.failed for c in checks.values())


def test_no_group_to_move_is_a_warning():
    assert _verdicts(replace(FACTS, groups=()))["consumer groups"] == "warning"
    no_checkpoints = replace(FACTS, checkpoints_enabled=False)
    assert _verdicts(no_checkpoints)["consumer groups"] == "warning"
