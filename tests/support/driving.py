"""Run Mirrorline's driver inside the test process, on the shared Spark session."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from mirrorline.config import load_config
from mirrorline.control.heartbeats import heartbeat_flows_for
from mirrorline.driver import Driver, select_flows


def write_config(path: Path, clusters, body: str, *, heartbeats: bool = False) -> Path:
    """A properties file naming `clusters` (DevCluster objects) plus `body`.

    Heartbeats are off unless `heartbeats` is true: the clusters are shared by
    every test of a session, and a `heartbeats` topic left on a cluster is
    replicated by every later flow out of it (whatever its topic filter), which
    would change what those tests see.
    """
    lines = [f"clusters = {', '.join(c.alias for c in clusters)}"]
    lines += [f"{c.alias}.bootstrap.servers = {c.bootstrap_servers}" for c in clusters]
    lines += [
        "replication.factor = 1",
        "offset-syncs.topic.replication.factor = 1",
        "checkpoints.topic.replication.factor = 1",
        "heartbeats.topic.replication.factor = 1",
        "refresh.topics.interval.seconds = 1",
        "sync.topic.configs.interval.seconds = 1",
    ]
    if not heartbeats:
        lines.append("emit.heartbeats.enabled = false")
    path.write_text("\n".join(lines) + "\n" + body)
    return path


@contextmanager
def running_driver(
    config_file: Path, spark, work_dir: Path, clusters: Iterable[str] | None = None
) -> Iterator[Driver]:
    """Start a driver for every enabled flow (into `clusters`, as `--clusters` selects;
    and heartbeats, as `mirrorline driver` does); stop it (between batches) on exit."""
    config = load_config(config_file)
    driver = Driver(
        select_flows(config, clusters), spark, work_dir, heartbeat_flows_for(config, clusters)
    )
    stop = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            driver.run(stop)
        except BaseException as exc:  # noqa: BLE001 - surfaced to the test below
            failure.append(exc)

    thread = threading.Thread(target=run, name="mirrorline-driver", daemon=True)
    thread.start()
    try:
        yield driver
    finally:
        stop.set()
        thread.join(120)
        assert not thread.is_alive(), "driver did not stop within 120s"
    if failure:
        raise failure[0]
