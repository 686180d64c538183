"""`mirrorline verify`'s rules around the comparison: ranges, times, topic selection, the
refusal of transforms, and the summary the service shows."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.config.loader import parse_config
from mirrorline.control.translation import Run
from mirrorline.service.models import ReplicationDoc
from mirrorline.service.replications import Replication
from mirrorline.verification.ranges import parse_when, plan_partition
from mirrorline.verification.report import PartitionReport, VerifyReport
from mirrorline.verification.run import VerifyRefused, refuse_transforms, select_topics
from mirrorline.verification.summary import (
    VerificationSummary,
    decode_summary,
    summary_key,
    summary_value,
)

HEAD = (
    "clusters = east, west\n"
    "east.bootstrap.servers = 127.0.0.1:1\nwest.bootstrap.servers = 127.0.0.1:2\n"
    "east->west.enabled = true\n"
)
SMT = "org.apache.kafka.connect.transforms."


def _flow(extra: str = ""):
    return parse_config(HEAD + extra, source="mm2.properties").flow("east", "west")


def _plan(runs, **kwargs):
    defaults = {"progress": 100, "log_start": 0, "log_end": 120}
    return plan_partition("orders", 0, "east.orders", runs, **{**defaults, **kwargs})


def test_the_range_runs_from_the_first_run_to_the_progress():
    plan = _plan([Run(0, 0, 100)])
    assert (plan.start, plan.end, plan.not_yet_copied, plan.not_covered) == (0, 100, 20, 0)


def test_offsets_before_the_first_run_are_not_covered():
    plan = _plan([Run(30, 0, 70)], log_start=10)
    assert (plan.start, plan.end, plan.not_covered) == (30, 100, 20)


def test_runs_older_than_the_log_start_start_at_the_log_start():
    plan = _plan([Run(0, 0, 100)], log_start=40)
    assert (plan.start, plan.not_covered) == (40, 0)


def test_a_partition_the_flow_never_reached_is_all_not_yet_copied():
    plan = _plan([], progress=None)
    assert (plan.start, plan.end, plan.not_yet_copied, plan.not_covered) == (0, 0, 120, 0)


def test_progress_without_runs_is_not_covered():
    # MirrorMaker 2's copy taken over: progress, but no record copied by the flow yet.
    plan = _plan([], progress=80)
    assert (plan.start, plan.end, plan.not_covered, plan.not_yet_copied) == (80, 80, 80, 40)


def test_since_and_until_narrow_the_range():
    plan = _plan([Run(0, 0, 100)], since=25, until=60)
    assert (plan.start, plan.end, plan.not_yet_copied, plan.not_covered) == (25, 60, 0, 0)
    plan = _plan([Run(0, 0, 100)], since=90, until=110)
    assert (plan.start, plan.end, plan.not_yet_copied) == (90, 100, 10)


def test_times_are_iso_epoch_or_durations_ago():
    now = 1_700_000_000_000
    assert parse_when("1h", now) == now - 3_600_000
    assert parse_when("30m", now) == now - 1_800_000
    assert parse_when("2d", now) == now - 2 * 86_400_000
    assert parse_when("1714550400000", now) == 1714550400000
    assert parse_when("2024-05-01T08:00:00Z", now) == 1714550400000
    with pytest.raises(ValueError, match="zone"):
        parse_when("2024-05-01T08:00:00", now)
    with pytest.raises(ValueError, match="duration"):
        parse_when("yesterday", now)


def test_topics_are_names_or_patterns_of_the_flow():
    flow = _flow()
    partitions = [("orders", 0), ("orders", 1), ("payments", 0)]
    assert select_topics(flow, partitions, "orders") == [("orders", 0), ("orders", 1)]
    assert select_topics(flow, partitions, "pay.*") == [("payments", 0)]
    assert select_topics(flow, partitions, None) == partitions
    with pytest.raises(VerifyRefused, match="no topic shipments"):
        select_topics(flow, partitions, "orders,shipments")
    with pytest.raises(VerifyRefused, match="matches"):
        select_topics(flow, partitions, "ship.*")


def test_a_flow_whose_transforms_change_records_is_refused_naming_them():
    chain = f"transforms = tag\ntransforms.tag.type = {SMT}InsertHeader\n"
    flow = _flow(chain + "transforms.tag.header = origin\ntransforms.tag.value.literal = east\n")
    with pytest.raises(VerifyRefused, match=rf"east->west .*tag \({SMT}InsertHeader\)"):
        refuse_transforms(flow)
    refuse_transforms(_flow())  # no transforms: nothing to refuse


def test_the_command_refuses_transforms_with_exit_code_2(tmp_path: Path):
    config = tmp_path / "mm2.properties"
    config.write_text(
        HEAD + f"transforms = drop\ntransforms.drop.type = {SMT}DropHeaders\n"
        "transforms.drop.headers = secret\n"
    )
    result = CliRunner().invoke(
        app, ["verify", "-c", str(config), "-s", "east", "-t", "west", "--json"]
    )
    assert result.exit_code == 2
    assert "drop" in result.stdout and "byte for byte" in result.stdout
    assert "Traceback" not in result.output


def test_bad_times_unknown_and_unreachable_clusters_are_usage_errors(tmp_path: Path):
    config = tmp_path / "mm2.properties"
    config.write_text(HEAD)
    base = ["verify", "-c", str(config), "-t", "west"]
    result = CliRunner().invoke(app, [*base, "-s", "east", "--since", "last week"])
    assert result.exit_code == 2 and "--since last week" in result.output
    result = CliRunner().invoke(app, [*base, "-s", "north"])
    assert result.exit_code == 2 and "no cluster north" in result.output
    # Nothing listens on the file's ports: the cluster is named, no stack trace.
    result = CliRunner().invoke(app, [*base, "-s", "east", "--timeout", "1"])
    assert result.exit_code == 2 and "cluster east (127.0.0.1:1) does not answer" in result.output
    assert "Traceback" not in result.output


def test_the_summary_round_trips_and_is_served_with_the_replication():
    report = VerifyReport("east->west", "1h", None, started_ms=1_000, finished_ms=2_000)
    part = PartitionReport("orders", 0, "east.orders", 0, 10, checked=10, not_yet_copied=3)
    part.missing.add({"source_offset": 4, "target_offset": 4})
    report.partitions.append(part)
    summary = VerificationSummary.of(report, "orders")
    flow, decoded = decode_summary(summary_key("east->west"), summary_value(summary))
    assert flow == "east->west" and decoded == summary
    assert decoded.verdict == "different" and decoded.differences == 1
    assert decode_summary(b'{"flow":"east->west","topic":"orders","version":1}', b"{}") is None
    doc = ReplicationDoc.of(
        Replication("east", "west", "running", "healthy", "", last_verification=summary.to_dict()),
        served_by="local",
    )
    assert doc.last_verification is not None and doc.last_verification.missing == 1
    assert doc.last_verification.since == "1h" and doc.last_verification.topics == "orders"
