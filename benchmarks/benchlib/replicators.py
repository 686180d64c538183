"""Mirrorline and MirrorMaker 2 started the way their users start them, on an
MM2-format properties file, as sampled child processes.

`write_replication_config` writes the one file both tools read in the failover
drill and the restart benchmark; the replication benchmark writes its own files
(see `contenders`) and uses the commands from here.
"""

from __future__ import annotations

import compileall
import functools
import os
import sys
from pathlib import Path

from benchlib.common import BENCH_DIR, REPO, SOURCE, TARGET
from benchlib.procs import SampledProcess
from mirrorline import jvm

TOOLS = ("mirrorline", "mm2")
TOOL_NAMES = {"mirrorline": "Mirrorline", "mm2": "MirrorMaker 2"}
MM2_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
# How Kafka's connect-mirror-maker.sh starts MM2 (heap and JVM options as shipped).
MM2_JVM_OPTIONS = [
    "-Xms256M",
    "-Xmx2G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]
# Logging of the benchmarks' JVMs (MM2, the copy loop): INFO, client configs included.
JVM_LOG_CONFIG = BENCH_DIR / "jvm-log4j2.properties"

# Single-node clusters: every topic a replicator creates has one replica.
REPLICATION_FACTOR_LINES = [
    "replication.factor = 1",
    "offset-syncs.topic.replication.factor = 1",
    "checkpoints.topic.replication.factor = 1",
    "heartbeats.topic.replication.factor = 1",
]
# The same for the Kafka Connect internal topics of MM2's dedicated mode.
MM2_STORAGE_LINES = [
    "config.storage.replication.factor = 1",
    "offset.storage.replication.factor = 1",
    "status.storage.replication.factor = 1",
]


def write_replication_config(
    path: Path, clusters, topic: str, tasks_max: int, exactly_once: bool = False
) -> Path:
    """One MM2-format file that both tools read unchanged (Mirrorline warns about and
    ignores the Connect-only keys). Everything else is left at each tool's defaults."""
    lines = [
        f"clusters = {SOURCE}, {TARGET}",
        *(f"{c.alias}.bootstrap.servers = {c.bootstrap_servers}" for c in clusters),
        f"{SOURCE}->{TARGET}.enabled = true",
        f"{SOURCE}->{TARGET}.topics = {topic}",
        f"tasks.max = {tasks_max}",
        *REPLICATION_FACTOR_LINES,
        *MM2_STORAGE_LINES,
    ]
    if exactly_once:
        lines.append("exactly.once.source.support = enabled")
    path.write_text("\n".join(lines) + "\n")
    return path


@functools.cache
def _bytecode_compiled() -> None:
    """Compile the checkout's Python once, as pip does when it installs Mirrorline.

    Where Python writes no bytecode (PYTHONDONTWRITEBYTECODE, as on CI machines), a
    driver started from the checkout would compile every module it imports at every
    start: about half a second of its start-up that an installed Mirrorline never
    pays. The compiled files go to `__pycache__` (ignored by git).
    """
    compileall.compile_dir(REPO / "src", quiet=1)


# The environment variable that sets the benchmark drivers' `--log-level`.
DRIVER_LOG_LEVEL = "MIRRORLINE_BENCH_LOG_LEVEL"


def mirrorline_command(
    config: Path, work_dir: Path, master: str | None = None
) -> tuple[list[str], dict[str, str]]:
    """`mirrorline driver --config FILE` of this checkout (on `master`, if given), and
    its environment."""
    _bytecode_compiled()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p
    )
    env["PYTHONUNBUFFERED"] = "1"  # status lines reach the log as they are printed
    command = [
        sys.executable,
        "-m",
        "mirrorline",
        # `debug` also puts Spark's progress of every micro-batch in the contender's log,
        # which `batch_phases.py` reads (see benchmarks/README.md, "Profiling Mirrorline").
        *(["--log-level", level] if (level := os.environ.get(DRIVER_LOG_LEVEL)) else []),
        "driver",
        "--config",
        str(config),
        "--clusters",
        TARGET,
        "--work-dir",
        str(work_dir),
        "--status-every",
        "5",
    ]
    if master is not None:
        command += ["--master", master]
    return command, env


def mm2_command(config: Path) -> tuple[list[str], dict[str, str]]:
    """MM2 in dedicated mode as `connect-mirror-maker.sh FILE --clusters west` runs it."""
    command = [
        jvm.java_executable(),
        *MM2_JVM_OPTIONS,
        f"-Dlog4j2.configurationFile={JVM_LOG_CONFIG}",
        "-cp",
        jvm.classpath("mirrormaker"),
        MM2_MAIN,
        str(config),
        "--clusters",
        TARGET,
    ]
    return command, dict(os.environ)


def start_replicator(tool: str, config: Path, work: Path, log_path: Path) -> SampledProcess:
    """Start `tool` ("mirrorline" or "mm2") on `config`; Mirrorline's scratch space
    is `work`/driver."""
    if tool == "mirrorline":
        command, env = mirrorline_command(config, work / "driver")
    else:
        command, env = mm2_command(config)
    return SampledProcess(TOOL_NAMES[tool], command, env, log_path, cwd=work)
