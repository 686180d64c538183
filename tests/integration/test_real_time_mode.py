"""`data.path.mode = real-time`: Spark's real-time mode, at least once, exact syncs.

The driver runs as a child process with one task slot per source partition
(`--master local[N]`). Records must arrive identical and in order; offset
syncs and checkpoints must follow the copies while a (ten-minute) batch runs,
from the tasks' reports, and point at the real copies; a restart must resume
from the saved progress, re-writing at most what the tasks wrote after their
last report. A driver with too few task slots must say so in the flow's status
instead of starving partitions.
"""

from __future__ import annotations

from support.driver_process import DriverProcess
from support.driving import running_driver, write_config
from support.kafka_io import (
    Record,
    by_partition,
    checkpoints_of,
    commit_offsets,
    consume,
    content,
    create_topic,
    end_offsets,
    produce,
    read_offset_syncs,
    unique_name,
    varied_records,
)
from support.wait import wait_until

PARTITIONS = 3
# Longer than the test: syncs, progress and checkpoints come from the tasks' reports.
BATCH_MS = 600_000


def _records(count: int, seed: int, start: int = 0) -> list[Record]:
    return varied_records(count, seed, PARTITIONS, start)


def _resumed(source: list[tuple], replica: list[tuple]) -> int:
    """How many copies `replica` holds twice, given that it must be `source`
    written once in order, except for one restart that went back at most to a
    saved position: replica == source[:a] + source[b:] with b <= a."""
    a = 0
    while a < len(replica) and a < len(source) and replica[a] == source[a]:
        a += 1
    rest = replica[a:]
    if not rest:
        assert a == len(source), f"{len(source) - a} records missing"
        return 0
    b = len(source) - len(rest)
    assert 0 <= b <= a, "the replica is not the source with one re-written stretch"
    assert rest == source[b:], "after the restart the replica differs from the source"
    return a - b


def test_real_time_flow_replicates_exactly_and_resumes_from_saved_progress(two_clusters, tmp_path):
    east, west = two_clusters
    topic = unique_name("realtime")
    remote = f"east.{topic}"
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        f"east->west.data.path.mode = real-time\neast->west.real-time.batch.ms = {BATCH_MS}\n"
        "emit.checkpoints.interval.seconds = 1\nrefresh.groups.interval.seconds = 1\n",
    )
    first = produce(east.bootstrap_servers, topic, _records(30_000, seed=1))
    group = unique_name("rtgroup")
    consumed = {p: 5_000 for p in range(PARTITIONS)}
    commit_offsets(east.bootstrap_servers, group, topic, consumed)

    def run_driver(name: str) -> DriverProcess:
        return DriverProcess(
            config,
            tmp_path / "work",
            tmp_path / f"{name}.log",
            driver_args=["--master", f"local[{PARTITIONS + 1}]"],
        )

    def copies() -> int:
        return sum(end_offsets(west.bootstrap_servers, remote).values())

    def wait_for_copies(driver: DriverProcess, count: int) -> None:
        wait_until(
            lambda: driver.check() or copies() >= count,
            timeout=180,
            what=f"{count:,} records in west/{remote}",
            detail=driver.log_tail,
        )

    def syncs_of(records: list[Record]):
        wanted = {(r.partition, r.offset) for r in records}
        return [
            s
            for s in read_offset_syncs(east.bootstrap_servers, "mm2-offset-syncs.west.internal")
            if s.topic == topic and (s.partition, s.upstream_offset) in wanted
        ]

    driver = run_driver("first")
    with driver:
        wait_for_copies(driver, 30_000)
        # Syncs, progress and checkpoints follow while the batch runs.
        last_records = {
            (p, max(r.offset for r in first if r.partition == p)) for p in range(PARTITIONS)
        }

        def found_last() -> set[tuple[int, int]]:
            return {(s.partition, s.upstream_offset) for s in syncs_of(first)} & last_records

        wait_until(
            lambda: driver.check() or found_last() == last_records,
            timeout=60,
            what="offset syncs for the last record of every partition",
            detail=lambda: (
                f"syncs of the last records: {sorted(found_last())}, "
                f"wanted {sorted(last_records)}; end of {driver.log_path}:\n" + driver.log_tail(80)
            ),
        )
        checkpoints = wait_until(
            lambda: (
                driver.check()
                or (
                    len(found := checkpoints_of(west.bootstrap_servers, "east", group, remote))
                    == PARTITIONS
                    and found
                )
            ),
            timeout=60,
            what=f"checkpoints of {group} for every partition",
            detail=driver.log_tail,
        )
        assert driver.stop(), f"the driver did not stop cleanly:\n{driver.log_tail()}"

    copied = consume(west.bootstrap_servers, remote, expected=30_000, timeout=120)
    assert by_partition(copied) == by_partition(first)
    source_at = {(r.partition, r.offset): content(r) for r in first}
    target_at = {(r.partition, r.offset): content(r) for r in copied}
    for p, checkpoint in checkpoints.items():
        # The group resumes on the copy at the copy of the record it would read next.
        assert checkpoint.upstream_offset == consumed[p]
        assert target_at[(p, checkpoint.downstream_offset)] == source_at[(p, consumed[p])]
    for sync in syncs_of(first):
        assert (
            target_at[(sync.partition, sync.downstream_offset)]
            == source_at[(sync.partition, sync.upstream_offset)]
        )

    # The next start resumes from the saved progress while records keep coming.
    second = produce(east.bootstrap_servers, topic, _records(6_000, seed=2, start=30_000))
    driver = run_driver("second")
    with driver:
        wait_for_copies(driver, 36_000)
        assert driver.stop(), f"the driver did not stop cleanly:\n{driver.log_tail()}"

    everything = consume(west.bootstrap_servers, remote, expected=copies(), timeout=120)
    source = by_partition(first + second)
    replica = by_partition(everything)
    # The first driver's progress covered all it wrote: nothing is written twice.
    assert {p: _resumed(source[p], replica[p]) for p in source} == {p: 0 for p in source}


def test_too_few_task_slots_is_a_flow_status(two_clusters, spark, tmp_path):
    east, west = two_clusters
    topic = unique_name("rtslots")
    create_topic(east.bootstrap_servers, topic, partitions=4)  # the session has 2 slots
    config = write_config(
        tmp_path / "mm2.properties",
        [east, west],
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "east->west.data.path.mode = real-time\n",
    )
    with running_driver(config, spark, tmp_path / "work") as driver:
        status = wait_until(
            lambda: next((s for s in driver.statuses() if s.state == "failed"), None),
            timeout=120,
            what="the flow to fail for lack of task slots",
        )
    assert "a task slot per source partition (4)" in status.reason, status.reason
    assert "--master local[4]" in status.reason, status.reason
