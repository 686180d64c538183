"""The summary `mirrorline config check` prints: clusters, each flow, its run-time changes."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mirrorline.cli import config_runtime
from mirrorline.cli.config_runtime import _why, read_runtime
from mirrorline.cli.config_summary import Runtime, cluster_row, flow_rows, loops, runtime_rows
from mirrorline.config.loader import parse_config
from mirrorline.config.model import FlowConfig
from mirrorline.control.flow_control import FlowControl, ListChanges, PositionRequest
from mirrorline.operations.source_link import SourceLink, advise

BASE = """\
clusters = A, B
A.bootstrap.servers = a1:9092, a2:9092
B.bootstrap.servers = b:9093
B.security.protocol = SASL_SSL
B.sasl.mechanism = PLAIN
B.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \\
    username="u" password="p";
A->B.enabled = true
A->B.topics = orders.*, payments
"""


def flow(extra: str = "") -> FlowConfig:
    return parse_config(BASE + extra, source="mm2.properties", environ={}).flow("A", "B")


def rows(flow: FlowConfig, runtime: Runtime | None = None) -> dict[str, list[str]]:
    """Rows by label; continuation rows (no label) go under the label before them."""
    found: dict[str, list[str]] = {}
    label = ""
    for name, text in flow_rows(flow, runtime):
        label = name or label
        found.setdefault(label, []).append(text)
    return found


def test_clusters_show_their_servers_and_a_security_protocol_other_than_plaintext() -> None:
    config = parse_config(BASE, environ={})
    assert cluster_row(config.clusters["A"]) == ("A", "a1:9092,a2:9092")
    assert cluster_row(config.clusters["B"]) == ("B", "b:9093 (SASL_SSL)")


def test_a_flow_shows_its_lists_policy_mode_data_path_and_loops() -> None:
    shown = rows(flow())
    assert shown["topics"] == ["orders.*, payments"]
    assert shown["groups"] == [".* (default)"]
    assert shown["topics.exclude"][0].endswith("(default)")
    assert shown["policy"] == ["DefaultReplicationPolicy (orders → A.orders)"]
    assert shown["mode"] == ["at-least-once"]
    assert shown["data path"] == [
        "micro-batch (batches of about 5 s on a backlog), one task per executor task slot, "
        "each reading several partitions"
    ]
    assert shown["control loops"] == [
        "refresh.topics 600 s, refresh.groups 600 s, sync.topic.configs 600 s, "
        "sync.topic.acls 600 s, emit.checkpoints 60 s, emit.heartbeats 1 s, emit.metrics 5 s",
        "off: sync.group.offsets",
    ]
    assert "run time" not in shown  # nothing asked: nothing said


def test_modes_data_paths_and_loops_follow_the_settings() -> None:
    shown = rows(
        flow(
            "A->B.exactly.once.source.support = enabled\n"
            "A->B.errors.tolerance = all\n"
            "A->B.errors.deadletterqueue.topic.name = dlq\n"
            "A->B.tasks.max = 3\n"
            "A->B.micro-batch.max.records = 40000\n"
            "A->B.replication.policy.class = IdentityReplicationPolicy\n"
            "A->B.emit.heartbeats.enabled = false\n"
        )
    )
    assert shown["mode"] == [
        "exactly-once (Kafka transactions); records the target refuses are skipped to dlq"
    ]
    assert shown["data path"] == [
        "micro-batch (batches of about 5 s on a backlog, at most 40000 records), at most 3 tasks"
    ]
    assert shown["policy"] == ["IdentityReplicationPolicy (orders → orders)"]
    real_time = rows(flow("A->B.data.path.mode = real-time\nA->B.real-time.batch.ms = 30000\n"))
    assert real_time["data path"] == [
        "real-time (batches of 30 s, progress saved four times a second), "
        "one task per source partition"
    ]
    on, off = loops(flow("sync.group.offsets.enabled = true\nemit.metrics.enabled = false\n"))
    assert "sync.group.offsets 60 s" in on
    assert off == ["emit.metrics"]


def test_run_time_changes_show_the_file_list_the_changes_and_the_effective_list() -> None:
    control = FlowControl(
        flow="A->B",
        lists={
            "topics": ListChanges(added=("invoices.*",), removed=("payments",)),
            "groups.exclude": ListChanges(added=("batch-.*",)),
        },
    )
    shown = rows(flow(), Runtime("B", control=control))
    assert shown["topics"] == [
        "orders.*, invoices.* (effective, changed at run time)",
        "in the file: orders.*, payments",
        "added at run time: invoices.*",
        "removed at run time: payments",
    ]
    assert shown["groups.exclude"] == [
        "console-consumer-.*, connect-.*, __.*, batch-.* (effective, changed at run time)",
        "in the file: console-consumer-.*, connect-.*, __.*",
        "added at run time: batch-.*",
    ]
    assert shown["groups"] == [".* (default)"]
    assert shown["run time"] == ["3 list changes (shown above), read from B"]
    assert "wanted state" not in shown


def test_a_state_other_than_running_and_pending_positions_are_shown() -> None:
    control = FlowControl(
        flow="A->B",
        state="paused",
        positions=PositionRequest("r1", {("orders", 0): 5, ("orders", 1): 7}, 0),
    )
    assert runtime_rows(Runtime("B", control=control)) == [
        ("run time", "no list changes, read from B"),
        ("wanted state", "paused (an operator asked for it at run time)"),
        ("start positions", "2 partitions requested, not applied yet"),
    ]


@pytest.mark.parametrize(
    ("runtime", "text"),
    [
        (Runtime("B", note="B did not answer"), "run-time changes unknown: B did not answer"),
        (Runtime("B", note="not read (--offline)", offline=True), "not read (--offline)"),
    ],
)
def test_unknown_run_time_changes_are_one_line(runtime: Runtime, text: str) -> None:
    assert runtime_rows(runtime) == [("run time", text)]


def test_the_json_form_has_every_list_as_in_the_file_as_changed_and_as_effective() -> None:
    control = FlowControl(
        flow="A->B", state="stopped", restarts=2, state_changed_ms=1000,
        lists={"topics": ListChanges(added=("invoices.*",), removed=("payments",))},
    )  # fmt: skip
    document = Runtime("B", control=control).to_dict(flow())
    assert document is not None
    assert document["read_from"] == "B"
    assert document["state"] == "stopped"
    assert document["restarts"] == 2
    assert document["pending_positions"] is None
    assert document["lists"]["topics"] == {
        "file": ["orders.*", "payments"],
        "added": ["invoices.*"],
        "removed": ["payments"],
        "effective": ["orders.*", "invoices.*"],
    }
    assert document["lists"]["groups"] == {
        "file": [".*"], "added": [], "removed": [], "effective": [".*"],
    }  # fmt: skip
    assert Runtime("B", note="B did not answer").to_dict(flow()) is None


def test_a_target_whose_clients_librdkafka_refuses_gets_a_note_without_secrets(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "absent-ca.pem"
    config = parse_config(
        BASE.replace("B.sasl.mechanism", f"B.ssl.ca.location = {missing}\nB.sasl.mechanism"),
        environ={},
    )
    (runtime,) = read_runtime([config.flow("A", "B")], timeout=1).values()
    assert runtime.control is None
    assert runtime.note is not None
    assert runtime.note.startswith("reading them from B failed: Failed to create consumer")
    assert "ssl.ca.location" in runtime.note


def test_a_read_that_outlives_the_answer_may_close_its_clients_before_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()

    def stuck(flow: FlowConfig, timeout: float, first_start: bool) -> Runtime:
        release.wait(30)
        return Runtime(flow.target)

    at_exit: list[tuple[Any, ...]] = []
    monkeypatch.setattr(config_runtime, "_read_one", stuck)
    monkeypatch.setattr(config_runtime.atexit, "register", lambda *args: at_exit.append(args))
    (runtime,) = read_runtime([flow()], timeout=0.1).values()
    assert runtime.note == "B did not answer"
    ((let_close, late, until),) = at_exit
    assert [t.name for t in late] == ["runtime A->B"] and late[0].is_alive()
    release.set()
    let_close(late, until)
    assert not late[0].is_alive()


def test_notes_name_a_cluster_that_does_not_answer_and_hide_secrets() -> None:
    b = flow()
    assert _why(b, "cannot read x: Local: Timed out") == "B did not answer"
    assert _why(b, "Local: All broker connections are down") == "B did not answer"
    jaas = b.client_settings("target", "consumer")["sasl.password"]
    assert _why(b, f"bad value {jaas}") == "reading them from B failed: bad value [hidden]"


def test_a_near_source_gets_its_round_trip_and_no_advice() -> None:
    link = advise(flow(), 1.2)
    assert (link.round_trip_ms, link.facts, link.advice) == (1.2, (), ())
    assert rows(flow(), Runtime("B", link=link))["source link"] == [
        "1.2 ms round trip to A (near; fastest of 5)"
    ]


def test_a_far_source_gets_its_read_ceilings_and_advice_with_numbers() -> None:
    link = advise(flow("A.consumer.receive.buffer.bytes = 65536\n"), 50.0)
    assert link.facts == (
        "each source partition reads at most 1 MiB per round trip: 21 MB/s per partition "
        "(max.partition.fetch.bytes, fetch.max.bytes)",
        "receive.buffer.bytes = 65536 fixes the TCP window: at most 1.3 MB/s per connection",
        "micro-batches: record age about 315 ms at p50 at this distance",
    )
    assert link.advice == (
        "A.consumer.max.partition.fetch.bytes = 5242880 (and fetch.max.bytes at least as much) "
        "lets a partition read 100 MB/s at this distance",
        "A.consumer.receive.buffer.bytes = -1 lets the operating system size the window "
        "to the link",
        "data.path.mode = real-time keeps record age near one round trip "
        "(about 50 ms more than on a near source)",
    )
    shown = rows(flow(), Runtime("B", link=link))
    assert len(shown["source link"]) == 4 and len(shown["advice"]) == 3


def test_a_far_source_tuned_for_it_gets_only_the_numbers() -> None:
    tuned = "A.consumer.max.partition.fetch.bytes = 10485760\nA->B.data.path.mode = real-time\n"
    link = advise(flow(tuned), 50.0)
    assert link.advice == ()
    assert link.facts == (
        "each source partition reads at most 10 MiB per round trip: 210 MB/s per partition "
        "(max.partition.fetch.bytes, fetch.max.bytes)",
    )


def test_an_unknown_round_trip_says_why() -> None:
    link = SourceLink("A", note="A did not answer")
    assert link.summary == "round trip unknown: A did not answer"
    assert link.to_dict()["round_trip_ms"] is None
