"""The replicators of a chaos run: Mirrorline's driver, and MirrorMaker 2 when it runs beside.

Each reads its own properties file (MM2's format, which Mirrorline reads
too) naming only its flows and their topics, so the two never copy each
other's topics while they see the same clusters, restarts and kills.
Mirrorline's remote topics get three replicas, as on production clusters;
its flows set their modes with flow-level keys.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mirrorline.devcluster import DevClusters
from mirrorline.process import dying_with_parent
from support.crash_harness import Mode
from support.driver_process import DriverProcess, child_env
from support.mm2_process import Mm2Process

Say = Callable[[str], None]


@dataclass(frozen=True)
class ChaosFlow:
    replicator: str  # "mirrorline" or "mm2"
    source: str
    target: str
    mode: Mode
    topic: str

    @property
    def remote(self) -> str:
        return f"{self.source}.{self.topic}"

    @property
    def name(self) -> str:
        return f"{self.replicator} {self.source}->{self.target} {self.mode.name}"


def write_config(path: Path, dev: DevClusters, flows: list[ChaosFlow], extra: list[str]) -> Path:
    """A properties file for `flows` (one replicator's) on the clusters of `dev`."""
    clusters = dev.clusters()
    lines = [f"clusters = {', '.join(c.alias for c in clusters)}"]
    lines += [f"{c.alias}.bootstrap.servers = {c.bootstrap_servers}" for c in clusters]
    lines += ["emit.heartbeats.enabled = false", "sync.group.offsets.enabled = false", *extra]
    for flow in flows:
        prefix = f"{flow.source}->{flow.target}"
        lines += [f"{prefix}.enabled = true", f"{prefix}.topics = {flow.topic}"]
        lines += [f"{prefix}.{line}" for line in flow.mode.settings.splitlines() if line]
    path.write_text("\n".join(lines) + "\n")
    return path


class Replicators:
    """Starts, kills and stops Mirrorline's driver (and MM2) for the flows of a run."""

    def __init__(
        self,
        dev: DevClusters,
        flows: list[ChaosFlow],
        batch_records: int | None,
        work_dir: Path,
        say: Say,
        service: bool = False,
    ) -> None:
        (work_dir / "logs").mkdir(parents=True, exist_ok=True)
        ours = [f for f in flows if f.replicator == "mirrorline"]
        mm2 = [f for f in flows if f.replicator == "mm2"]
        settings = ["replication.factor = 3"]
        if batch_records is not None:
            settings.append(f"micro-batch.max.records = {batch_records}")
        if service:
            # The service keeps its longest window of samples (60 minutes by default):
            # its memory would fill for the whole of an hour's soak. With 5 minutes
            # it is full after the soak's warm-up, and what grows after is a leak.
            settings.append("service.windows = 1m, 5m")
        self.config = write_config(work_dir / "mirrorline.properties", dev, ours, settings)
        self._mm2 = None
        if mm2:
            self._mm2 = (
                write_config(work_dir / "mm2.properties", dev, mm2, []),
                mm2[0].target,
            )
        self._work_dir = work_dir
        self._say = say
        self._starts = 0
        self.driver: DriverProcess | None = None
        self.mm2: Mm2Process | None = None
        self.service: subprocess.Popen[bytes] | None = None
        if service:
            with open(work_dir / "logs" / "service.log", "wb") as log:
                self.service = subprocess.Popen(
                    dying_with_parent(
                        [
                            sys.executable,
                            "-m",
                            "mirrorline",
                            "service",
                            "-c",
                            str(self.config),
                            "--host",
                            "127.0.0.1",
                            "--port",
                            "0",
                        ]
                    ),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=child_env(),
                )

    def start(self) -> None:
        self._starts += 1
        logs = self._work_dir / "logs"
        self.driver = DriverProcess(
            self.config, self._work_dir / "driver", logs / f"driver-{self._starts}.log"
        )
        if self._mm2 is not None:
            config, target = self._mm2
            self.mm2 = Mm2Process(config, target, logs / f"mm2-{self._starts}.log")

    def check(self) -> None:
        """Raise if a replicator exited by itself."""
        if self.driver is not None:
            self.driver.check()
        if self.mm2 is not None and not self.mm2.running():
            raise AssertionError(f"MirrorMaker 2 exited with {self.mm2.process.returncode}")
        if self.service is not None and self.service.poll() is not None:
            raise AssertionError(f"the service exited with {self.service.returncode}")

    def kill_and_restart(self) -> None:
        self._say("    SIGKILL to the replicators; starting them again")
        if self.driver is not None:
            self.driver.crash()
        if self.mm2 is not None:
            self.mm2.kill()
        self.start()

    def stop(self) -> tuple[int | None, bool]:
        """Stop the driver as a service manager does: its exit code, whether it printed a
        traceback. MM2 is stopped with SIGTERM too."""
        assert self.driver is not None
        self.driver.stop(group=True)
        code = self.driver.popen.returncode
        traceback = "Traceback" in self.driver.log_path.read_text(errors="replace")
        if self.mm2 is not None:
            self.mm2.stop()
        return code, traceback

    def close(self) -> None:
        if self.driver is not None:
            self.driver.crash()
        if self.mm2 is not None and self.mm2.running():
            self.mm2.kill()
        if self.service is not None:
            self.service.terminate()
            self.service.wait(60)
