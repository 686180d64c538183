"""Replicate streams between multi-node clusters through a schedule of failures; count the damage.

One run: two dev clusters of several nodes (`DevClusters.up(brokers=3)`), and
a numbered stream (`chaos_streams.NumberedStream`) into a topic of each flow:

- Mirrorline, one `mirrorline driver` with two flows, source->target in
  exactly-once mode and target->source in at-least-once mode, so that every
  broker event hits both modes at once (each cluster is a source and a target);
- optionally MirrorMaker 2 beside it (dedicated mode, its own topic,
  source->target, at-least-once: its default), under the same schedule.

The events of the schedule (`chaos_events`) run one after the other. An event
may wait for its moment (`Event.at_s`, seconds into the run; the soak's
schedule), otherwise it follows the previous one as soon as every copy caught
up with it. After each event the run measures its time to recover: from the
end of the event until every copy holds every record its source had
acknowledged by then (`recover_timeout_s` at most; longer counts as not
recovered).

After the last event the streams stop, the copies catch up, Mirrorline's
driver is stopped as a service manager stops it (SIGTERM to its process group:
exit code 0, no traceback) and each copy is judged twice:

- `mirrorline verify` (Mirrorline's flows), through the offset mapping: no
  source record missing, different or misplaced; in exactly-once mode no
  extra record either;
- the census of the watcher, by sequence number, for every replicator
  (MirrorMaker 2 included): lost and duplicated records (a copy may hold a
  record as often as a census of its source topic finds it there), the
  highest record age and its p99 per window.

Beside it, every move of a partition's leadership is recorded with its time
(`chaos_leaders`), so that a stall in a window without an event can be laid
beside what the clusters did then.

Shared by `tests/integration/test_chaos.py` (short) and `benchmarks/chaos.py`
(long runs, the hour soak).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mirrorline.devcluster import DevClusters
from support.chaos_events import BrokerChaos, Event
from support.chaos_leaders import LeaderMove, LeaderWatch
from support.chaos_replicators import ChaosFlow, Replicators
from support.chaos_streams import NumberedStream, ReplicaWatcher, padded_records
from support.crash_harness import AT_LEAST_ONCE, EXACTLY_ONCE
from support.driver_process import run_mirrorline
from support.kafka_io import create_topic, unique_name
from support.wait import wait_until

Say = Callable[[str], None]


@dataclass(frozen=True)
class ChaosPlan:
    events: list[Event]
    partitions: int = 4
    rate: int = 1_000  # records/s into each flow's topic
    value_bytes: int = 64
    batch_records: int | None = None  # micro-batch.max.records; None: sized by time alone
    mm2: bool = False  # MirrorMaker 2 beside Mirrorline
    window_s: float = 60.0  # record-age p99 per window of this length
    start_timeout_s: float = 240.0  # for the replicators' first copies
    recover_timeout_s: float = 300.0
    duration_s: float = 0.0  # the streams run at least this long (the soak's hour)
    service: bool = False  # `mirrorline service` beside the driver (its memory is watched)
    # Time retention of the streams' topics (copied to their remote topics), so that a
    # long run's 3-replica logs do not fill the disk; `verify` then checks the records
    # of the last half of it, and the census all of them. None: kept for the run.
    retention_minutes: float | None = None

    def topic_config(self) -> dict[str, str]:
        if self.retention_minutes is None:
            return {}
        retention_ms = int(self.retention_minutes * 60_000)
        return {"retention.ms": str(retention_ms), "segment.ms": str(retention_ms // 5)}

    def verify_window(self) -> list[str]:
        """`mirrorline verify`'s time window: records still kept on both sides."""
        if self.retention_minutes is None:
            return []
        return ["--since", f"{max(1, int(self.retention_minutes / 2))}m"]


@dataclass
class EventResult:
    event: str
    began_s: float  # seconds into the run
    seconds: float  # how long the event itself took
    recovered_s: dict[str, float | None]  # per flow; None: not within recover_timeout_s


@dataclass
class FlowResult:
    flow: str
    replicator: str
    mode: str
    produced: int
    copies: int
    lost: int
    duplicated: int  # copies beyond as many as the source holds
    source_duplicated: int  # records the source itself holds more than once
    max_age_ms: int
    age_p99_ms: list[tuple[int, int, int]]  # (window, first copies in it, p99 ms)
    verify: dict[str, int] | None  # `mirrorline verify` totals (Mirrorline's flows)
    verdict: str | None


@dataclass
class ChaosReport:
    schedule: list[str]
    events: list[EventResult] = field(default_factory=list)
    flows: list[FlowResult] = field(default_factory=list)
    caught_up_s: float = 0.0  # seconds into the run when the copies first held every record
    leader_moves: list[LeaderMove] = field(default_factory=list)
    driver_exit_code: int | None = None
    driver_traceback: bool = False
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def violations(self) -> list[str]:
        """Every way Mirrorline broke its guarantees in this run (empty: it kept them).

        MirrorMaker 2's losses and duplicates are reported, not violations.
        """
        found = list(self.problems)
        for f in (f for f in self.flows if f.replicator == "mirrorline"):
            if f.lost:
                found.append(f"{f.flow}: {f.lost} source records have no copy")
            if f.mode == EXACTLY_ONCE.name and f.duplicated:
                found.append(f"{f.flow}: {f.duplicated} records copied more than once")
            kinds = ("missing", "different", "misplaced")
            if f.mode == EXACTLY_ONCE.name:
                kinds += ("extra",)
            wrong = {k: f.verify[k] for k in kinds if f.verify and f.verify[k]}
            if f.verify is None or wrong:
                found.append(f"{f.flow}: mirrorline verify found {wrong or 'nothing to check'}")
        for e in self.events:
            late = [flow for flow, s in e.recovered_s.items() if s is None and "mirrorline" in flow]
            if late:
                found.append(f"{e.event}: {', '.join(late)} did not catch up")
        if self.driver_exit_code != 0:
            found.append(f"the driver exited with {self.driver_exit_code} on SIGTERM")
        if self.driver_traceback:
            found.append("the driver printed a traceback")
        return found

    def to_dict(self) -> dict:
        return {
            "schedule": self.schedule,
            "events": [vars(e) for e in self.events],
            "flows": [vars(f) for f in self.flows],
            "caught_up_s": self.caught_up_s,
            "leader_moves": [vars(m) for m in self.leader_moves],
            "driver_exit_code": self.driver_exit_code,
            "driver_traceback": self.driver_traceback,
            "seconds": self.seconds,
            "violations": self.violations(),
        }


def run_chaos(dev: DevClusters, work_dir: Path, plan: ChaosPlan, say: Say = print) -> ChaosReport:
    """Run `plan` on the two clusters of `dev`; return what happened to every copy."""
    began = time.monotonic()
    source, target = (c.alias for c in dev.clusters())
    flows = [
        ChaosFlow("mirrorline", source, target, EXACTLY_ONCE, unique_name("chaos-eos")),
        ChaosFlow("mirrorline", target, source, AT_LEAST_ONCE, unique_name("chaos-alo")),
    ]
    if plan.mm2:
        flows.append(ChaosFlow("mm2", source, target, AT_LEAST_ONCE, unique_name("chaos-mm2")))
    for flow in flows:
        create_topic(
            dev.client_config(flow.source),
            flow.topic,
            plan.partitions,
            plan.topic_config(),
            replication_factor=-1,
        )
    streams = {
        f: NumberedStream(
            dev.client_config(f.source),
            f.topic,
            plan.rate,
            padded_records(plan.partitions, plan.value_bytes),
        )
        for f in flows
    }
    watchers = {
        f: ReplicaWatcher(
            dev.client_config(f.target),
            f.remote,
            plan.partitions,
            f.mode.isolation_level,
            plan.window_s,
        )
        for f in flows
    }
    # What the sources hold: the census allows a copy each record as often as its source.
    sources = {
        f: ReplicaWatcher(
            dev.client_config(f.source), f.topic, plan.partitions, "read_committed", plan.window_s
        )
        for f in flows
    }
    report = ChaosReport([str(e) for e in plan.events])
    replicators = Replicators(dev, flows, plan.batch_records, work_dir, say, plan.service)
    threads = [*streams.values(), *watchers.values(), *sources.values()]
    for thread in threads:
        thread.start()
    leaders = LeaderWatch({a: dev.client_config(a) for a in (source, target)}, began)
    leaders.start()
    run = _Run(dev, flows, streams, watchers, sources, replicators, plan, say, began)
    try:
        replicators.start()
        run.wait_first_copies()
        run.caught_up(plan.recover_timeout_s)
        report.caught_up_s = round(time.monotonic() - began, 1)
        for event in plan.events:
            report.events.append(run.event(event))
        run.hold_until(plan.duration_s)
        for stream in streams.values():
            stream.stop()
            stream.check()
        say("  streams stopped; waiting for every copy to hold every record")
        late = set(f.name for f in flows) - set(run.caught_up(plan.recover_timeout_s))
        if late:
            report.problems.append(f"{', '.join(sorted(late))}: not caught up at the end")
        report.driver_exit_code, report.driver_traceback = replicators.stop()
        for flow in flows:
            report.flows.append(run.judge(flow, replicators.config))
    finally:
        replicators.close()
        for thread in threads:
            thread.stop()
        leaders.stop()
        report.leader_moves = leaders.moves
    report.seconds = round(time.monotonic() - began, 1)
    return report


class _Run:
    """The moving parts of one run, and the measurements around each event."""

    def __init__(
        self, dev, flows, streams, watchers, sources, replicators, plan, say, began
    ) -> None:
        self.flows: list[ChaosFlow] = flows
        self.streams: dict[ChaosFlow, NumberedStream] = streams
        self.watchers: dict[ChaosFlow, ReplicaWatcher] = watchers
        self.sources: dict[ChaosFlow, ReplicaWatcher] = sources
        self.replicators: Replicators = replicators
        self.brokers = BrokerChaos(dev, say)
        self.aliases = [c.alias for c in dev.clusters()]
        self.plan: ChaosPlan = plan
        self.say = say
        self.began = began

    def check(self) -> None:
        self.replicators.check()
        for thread in (*self.streams.values(), *self.watchers.values(), *self.sources.values()):
            thread.check()

    def wait_first_copies(self) -> None:
        def copying() -> bool:
            self.check()
            return all(w.distinct > 0 for w in self.watchers.values())

        wait_until(
            copying,
            timeout=self.plan.start_timeout_s,
            what="every replicator's first copied record",
            interval=0.2,
        )
        self.say(f"  copying after {time.monotonic() - self.began:.0f} s")

    def hold_until(self, at_s: float) -> None:
        """Let the streams run until `at_s` seconds into the run, watching the replicators."""
        while (wait := at_s - (time.monotonic() - self.began)) > 0:
            self.check()
            time.sleep(min(wait, 1.0))  # the schedule's own pace, not a synchronisation

    def event(self, event: Event) -> EventResult:
        self.hold_until(event.at_s)
        at = time.monotonic()
        self.say(f"  {event} at {at - self.began:.0f} s")
        self._do(event)
        seconds = time.monotonic() - at
        recovered = self.caught_up(self.plan.recover_timeout_s)
        result = EventResult(
            str(event),
            round(at - self.began, 1),
            round(seconds, 1),
            {f.name: recovered.get(f.name) for f in self.flows},
        )
        shown = ", ".join(
            f"{name} {'-' if s is None else f'{s:.1f} s'}" for name, s in result.recovered_s.items()
        )
        self.say(f"    took {seconds:.1f} s; caught up after: {shown}")
        return result

    def _do(self, event: Event) -> None:
        if event.kind == "rolling-restart":
            self.brokers.rolling_restart([event.cluster] if event.cluster else self.aliases)
        elif event.kind == "broker-restart":
            self.brokers.broker_restart(event.cluster)
        elif event.kind == "leader-kill":
            flow = next(f for f in self.flows if event.cluster in (f.source, f.target))
            topic = flow.topic if flow.source == event.cluster else flow.remote
            self.brokers.leader_kill(event.cluster, topic)
        elif event.kind == "controller-kill":
            self.brokers.controller_kill(event.cluster)
        elif event.kind == "outage":
            self.brokers.outage(event.cluster, event.seconds)
        else:
            self.replicators.kill_and_restart()

    def caught_up(self, timeout: float) -> dict[str, float]:
        """Wait until every copy holds what its source acknowledged now: seconds per flow,
        without those that did not within `timeout`."""
        goals = {f: self.streams[f].acknowledged for f in self.flows}
        since = time.monotonic()
        done: dict[str, float] = {}
        while len(done) < len(self.flows) and time.monotonic() - since < timeout:
            self.check()
            for f in self.flows:
                if f.name not in done and self.watchers[f].distinct >= goals[f]:
                    done[f.name] = round(time.monotonic() - since, 1)
            time.sleep(0.1)
        return done

    def judge(self, flow: ChaosFlow, config: Path) -> FlowResult:
        watcher, source = self.watchers[flow], self.sources[flow]
        produced = self.streams[flow].acknowledged
        wait_until(
            lambda: source.distinct >= produced,
            timeout=60,
            what=f"the census of {flow.topic} on {flow.source}",
            interval=0.2,
        )
        census = watcher.census(produced, source)
        totals, verdict = None, None
        if flow.replicator == "mirrorline":
            done = run_mirrorline(
                "verify",
                "-c",
                config,
                "-s",
                flow.source,
                "-t",
                flow.target,
                "--topics",
                flow.topic,
                *self.plan.verify_window(),
                "--json",
            )
            if done.returncode in (0, 1):
                document = json.loads(done.stdout)
                totals, verdict = document["totals"], document["verdict"]
            else:
                self.say(f"  verify of {flow.name} failed: {done.stderr.strip()[-500:]}")
        result = FlowResult(
            flow=flow.name,
            replicator=flow.replicator,
            mode=flow.mode.name,
            produced=census.produced,
            copies=census.copies,
            lost=census.lost,
            duplicated=census.duplicated,
            source_duplicated=census.source_duplicated,
            max_age_ms=watcher.max_age_ms,
            age_p99_ms=watcher.age_p99_per_window(),
            verify=totals,
            verdict=verdict,
        )
        self.say(
            f"  {flow.name}: {census.produced:,} records, {census.lost:,} lost, "
            f"{census.duplicated:,} duplicated ({census.source_duplicated:,} in the source), "
            f"highest age {watcher.max_age_ms / 1000:.1f} s"
            + (f", verify {verdict} ({totals['checked']:,} checked)" if totals else "")
        )
        return result
