"""What one run of one contender on one workload shares, whatever the workload:
its names and files, its start, the checks of its client settings, its stop and the
numbers every run reports."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchlib import client_check, contenders
from benchlib.checkpoint_probe import CHECKPOINT_LINES
from benchlib.common import SOURCE, TARGET, say
from benchlib.contenders import Contender
from benchlib.kafka_data import delete_topics
from benchlib.other_load import OtherLoad
from benchlib.procs import SampledProcess
from benchlib.workloads import Workload

GB = 1e9
MB = 1e6
MIB = 1024 * 1024
# Long enough for a graceful stop of every contender (MM2 takes a few seconds).
STOP_TIMEOUT_S = 60


@dataclass(frozen=True)
class Settings:
    """The run-wide choices, from the command line."""

    records: int
    partitions: int
    tasks_max: int
    latency_seconds: float
    warmup_seconds: float
    timeout: float
    quiet_timeout: float
    rounds: int = 1  # of every backlog workload (see rounds.py)
    interleave: bool = False  # a steady workload's contenders take turns (turns.py)


@dataclass
class Run:
    """One contender on one workload, on the running clusters."""

    contender: Contender
    workload: Workload
    clusters: list  # [east, west]
    work: Path
    settings: Settings
    load: OtherLoad
    verified: dict = field(default_factory=dict)  # Mirrorline's checked settings, by contender
    extra_lines: tuple[str, ...] = ()  # more settings for every tuned contender's file
    round_index: int = 0  # its round of the workload (0-based; see rounds.py)

    @property
    def _suffix(self) -> str:
        return f"-{self.round_index + 1}" if self.round_index else ""

    @property
    def name(self) -> str:
        return f"{self.workload.name}-{self.contender.name}{self._suffix}"

    @property
    def topic(self) -> str:
        return f"bench-{self.workload.name.replace('_', '-')}-{self.contender.short}{self._suffix}"

    @property
    def remote(self) -> str:
        return contenders.remote_topic(self.topic)

    @property
    def source(self):
        return self.clusters[0]

    @property
    def target(self):
        return self.clusters[1]

    @property
    def log_path(self) -> Path:
        return self.work / "logs" / f"{self.name}.log"

    def bootstrap(self) -> dict[str, str]:
        return {SOURCE: self.source.bootstrap_servers, TARGET: self.target.bootstrap_servers}

    def start(self) -> SampledProcess:
        """Write the contender's file and start it."""
        config = self.work / "configs" / f"{self.name}.properties"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            contenders.config_text(
                self.contender,
                self.bootstrap(),
                self.topic,
                self.name,
                self.settings.tasks_max,
                self.extra_lines + (CHECKPOINT_LINES if self.workload.kind == "steady" else ()),
            )
        )
        return contenders.start(
            self.contender,
            config,
            self.work / "runs" / self.name,
            self.log_path,
            self.settings.partitions,
        )

    def client_settings(self) -> dict:
        """The data-path settings the contender's clients used (checked for tuned ones);
        Java contenders' come from their log, so call this after the stop."""
        if self.contender.kind == "mirrorline":
            return self.verified[self.contender.name]
        return client_check.check_java_clients(self.contender, self.log_path)

    def clean_up(self) -> None:
        """Delete this run's topics on both sides: the full run would fill a disk."""
        delete_topics(self.source.bootstrap_servers, [self.topic])
        delete_topics(self.target.bootstrap_servers, [self.remote])


def common_numbers(
    proc: SampledProcess, stopped, other_cores: float, disturbed: dict | None
) -> dict:
    """What every run reports about the contender's process tree, the machine meanwhile
    (other processes' cores; `disturbed`: its stalls, see `stalls`) and the stop."""
    return {
        "peak_rss_mib": round(proc.sampler.peak_rss_kib / 1024, 1),
        "peak_pss_mib": round(proc.sampler.peak_pss_kib / 1024, 1),
        "peak_processes": proc.sampler.peak_processes,
        "cpu_s_by_process": proc.sampler.cpu_seconds_by_role(),
        "other_cpu_cores": other_cores,
        "disturbed": disturbed,
        "stop": asdict(stopped),
    }


def per_gb(cpu_s: float, payload: int) -> float | None:
    return round(cpu_s / (payload / GB), 1) if payload else None


def stop(run: Run, proc: SampledProcess):
    stopped = proc.stop(STOP_TIMEOUT_S)
    if not stopped.graceful:
        say(f"  {run.contender.label} did not stop within {STOP_TIMEOUT_S}s of SIGTERM: killed")
    return stopped
