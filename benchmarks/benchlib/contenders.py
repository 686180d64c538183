"""The replication benchmark's contenders, their configuration files and commands.

Fairness is built here: ONE block of data-path client settings (`DATA_PATH`) is
written, with the same keys, into the files of every tuned contender, Mirrorline
(both modes), MM2 tuned and the copy loop; MM2 shipped gets everything but that
block. The keys are MM2's own per-cluster client keys, `<target>.producer.*` for
the producer that writes replicated records and `<source>.consumer.*` for the
consumer that reads them, which Mirrorline reads with the same meaning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchlib.common import BENCH_DIR, SOURCE, TARGET, BenchmarkError
from benchlib.procs import SampledProcess
from benchlib.replicators import (
    JVM_LOG_CONFIG,
    MM2_STORAGE_LINES,
    REPLICATION_FACTOR_LINES,
    mirrorline_command,
    mm2_command,
)
from mirrorline import jvm

# The data path's client settings, identical for every tuned contender.
DATA_PATH_PRODUCER = {
    "acks": "all",
    "enable.idempotence": "true",
    "max.in.flight.requests.per.connection": "5",
    "linger.ms": "5",
    "batch.size": "1000000",
    "compression.type": "none",
}
DATA_PATH_CONSUMER = {
    "max.poll.records": "500",  # MM2's default; `--max-poll-records` sets the run's
    "fetch.min.bytes": "1",
    "fetch.max.bytes": "52428800",
    "max.partition.fetch.bytes": "10485760",
}
BASELINE = "mm2_tuned"  # every ratio is against this contender
COPY_LOOP_SOURCE = BENCH_DIR / "CopyLoop.java"
# The jars the copy loop needs: the Kafka client, its compression codecs and logging.
COPY_LOOP_JARS = (
    "kafka-clients-",
    "lz4-java-",
    "snappy-java-",
    "zstd-jni-",
    "slf4j-api-",
    "log4j-api-",
    "log4j-core-",
    "log4j-slf4j2-impl-",
)


@dataclass(frozen=True)
class Contender:
    name: str
    label: str
    column: str  # short label for table columns and charts
    kind: str  # "mirrorline", "mm2" or "copy_loop"
    tuned: bool  # gets the DATA_PATH block
    exactly_once: bool = False
    real_time: bool = False  # Mirrorline's data.path.mode = real-time
    raw_metrics: bool = True  # Mirrorline's emit.metrics.enabled: off shows what they cost

    @property
    def short(self) -> str:
        """A short, topic-safe name."""
        return self.name.replace("_", "-")


CONTENDERS = {
    c.name: c
    for c in (
        Contender(
            "mirrorline_alo", "Mirrorline, at-least-once", "Mirrorline ALO", "mirrorline", True
        ),
        Contender(
            "mirrorline_alo_quiet",
            "Mirrorline, at-least-once, raw metrics off",
            "Mirrorline ALO no metrics",
            "mirrorline",
            True,
            raw_metrics=False,
        ),
        Contender(
            "mirrorline_eos",
            "Mirrorline, exactly-once",
            "Mirrorline EOS",
            "mirrorline",
            True,
            exactly_once=True,
        ),
        Contender(
            "mirrorline_rt",
            "Mirrorline, real-time mode",
            "Mirrorline RT",
            "mirrorline",
            True,
            real_time=True,
        ),
        Contender("mm2_shipped", "MirrorMaker 2, shipped defaults", "MM2 shipped", "mm2", False),
        Contender("mm2_tuned", "MirrorMaker 2, tuned", "MM2 tuned", "mm2", True),
        Contender("copy_loop", "copy loop (the machine's ceiling)", "copy loop", "copy_loop", True),
    )
}


def remote_topic(topic: str) -> str:
    """The topic's name on the target (MM2's default replication policy)."""
    return f"{SOURCE}.{topic}"


def data_path_lines() -> list[str]:
    """The DATA_PATH block in MM2's per-cluster client keys."""
    return [
        "# Data-path client settings, the same for every tuned contender.",
        *(f"{TARGET}.producer.{k} = {v}" for k, v in DATA_PATH_PRODUCER.items()),
        *(f"{SOURCE}.consumer.{k} = {v}" for k, v in DATA_PATH_CONSUMER.items()),
    ]


def config_text(
    contender: Contender,
    bootstrap: dict[str, str],
    topic: str,
    run: str,
    tasks_max: int,
    extra: tuple[str, ...] = (),
) -> str:
    """The file `contender` runs on: `bootstrap` maps alias -> servers, `topic` is the
    source topic, `run` names the run (MM2's Connect topics and group use it); a tuned
    contender also gets the `extra` lines (a benchmark's own settings, alike for all)."""
    if contender.kind == "copy_loop":
        return _copy_loop_text(bootstrap, topic)
    lines = [
        f"clusters = {SOURCE}, {TARGET}",
        *(f"{alias}.bootstrap.servers = {servers}" for alias, servers in bootstrap.items()),
        f"{SOURCE}->{TARGET}.enabled = true",
        f"{SOURCE}->{TARGET}.topics = {topic}",
        f"tasks.max = {tasks_max}",
        *REPLICATION_FACTOR_LINES,
    ]
    if contender.exactly_once:
        lines.append("exactly.once.source.support = enabled")
    if contender.real_time:
        lines.append("data.path.mode = real-time")
    if not contender.raw_metrics:
        lines.append("emit.metrics.enabled = false")
    if contender.kind == "mm2":
        lines += [
            "# Connect runtime of MM2's dedicated mode: fresh internal topics and worker",
            "# group for every run, so no run starts from another's connector state.",
            *MM2_STORAGE_LINES,
            f"config.storage.topic = mm2-configs.{run}.internal",
            f"offset.storage.topic = mm2-offsets.{run}.internal",
            f"status.storage.topic = mm2-status.{run}.internal",
            f"{TARGET}.group.id = mm2-{run}",
        ]
    if contender.tuned:
        lines += data_path_lines() + list(extra)
    return "\n".join(lines) + "\n"


def _copy_loop_text(bootstrap: dict[str, str], topic: str) -> str:
    lines = [
        f"source.bootstrap.servers = {bootstrap[SOURCE]}",
        f"target.bootstrap.servers = {bootstrap[TARGET]}",
        f"topic = {topic}",
        f"remote.topic = {remote_topic(topic)}",
        "replication.factor = 1",
        "# Data-path client settings, the same for every tuned contender.",
        *(f"producer.{k} = {v}" for k, v in DATA_PATH_PRODUCER.items()),
        *(f"consumer.{k} = {v}" for k, v in DATA_PATH_CONSUMER.items()),
    ]
    return "\n".join(lines) + "\n"


def copy_loop_classpath() -> str:
    jars = jvm.jars("mirrormaker")
    chosen = [j for j in jars if j.name.startswith(COPY_LOOP_JARS)]
    missing = [p for p in COPY_LOOP_JARS if not any(j.name.startswith(p) for j in chosen)]
    if missing:
        raise BenchmarkError(
            f"the mirrormaker jar set lacks {', '.join(m + '*.jar' for m in missing)}: "
            "run `make jvm`"
        )
    return os.pathsep.join(str(j) for j in chosen)


def start(
    contender: Contender, config: Path, run_dir: Path, log_path: Path, partitions: int
) -> SampledProcess:
    """Start `contender` on `config`; `run_dir` is its own scratch space and cwd."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if contender.kind == "mirrorline":
        # Real-time mode runs a task per source partition at once: a slot for each.
        master = f"local[{partitions}]" if contender.real_time else None
        command, env = mirrorline_command(config, run_dir / "driver", master)
    elif contender.kind == "mm2":
        command, env = mm2_command(config)
    else:
        command = [
            jvm.java_executable(),
            f"-Dlog4j2.configurationFile={JVM_LOG_CONFIG}",
            "-cp",
            copy_loop_classpath(),
            str(COPY_LOOP_SOURCE),
            str(config),
        ]
        env = dict(os.environ)
    return SampledProcess(contender.label, command, env, log_path, cwd=run_dir)
