"""The machine and the versions a benchmark ran on, for every results file."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from benchlib.common import REPO
from mirrorline import jvm


def _java_version() -> str:
    out = subprocess.run([jvm.java_executable(), "-version"], capture_output=True, text=True)
    return (out.stderr or out.stdout).splitlines()[0].strip()


def _jar_version(jar_set: str, artifact: str) -> str:
    for jar in jvm.jars(jar_set):
        match = re.fullmatch(rf"{re.escape(artifact)}-(\d[\w.]*)\.jar", jar.name)
        if match:
            return match.group(1)
    return "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    return round(meminfo_bytes("MemTotal") / 2**30, 1)


def meminfo_bytes(field: str) -> int:
    """A field of /proc/meminfo (`MemTotal`, `MemAvailable`...) in bytes; 0 if unread."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# The engine's code: the Python package and the JVM writer built from jvm/.
ENGINE_DIRS = ("src", "jvm")


def _git_commit() -> str:
    """The commit that last changed the engine (`ENGINE_DIRS`), which is what is measured."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return out.stdout.strip()

    commit = git("log", "-1", "--format=%h", "--", *ENGINE_DIRS) or "unknown"
    dirty = git("status", "--porcelain", "--", *ENGINE_DIRS)
    return commit + (f"+uncommitted changes in {' or '.join(ENGINE_DIRS)}" if dirty else "")


def environment() -> dict:
    """{"machine": {...}, "versions": {...}}: cores, CPU, memory, OS; Mirrorline's
    commit, Kafka, MM2, Spark, Python, Java and client library versions."""
    import confluent_kafka
    import pyspark

    return {
        "machine": {
            "cpu_cores": os.cpu_count(),
            "cpu_model": _cpu_model(),
            "memory_gib": _memory_gib(),
            "os": f"{platform.system()} {platform.release()}",
        },
        "versions": {
            "mirrorline_commit": _git_commit(),
            "kafka_broker": _jar_version("kafka", "kafka_2.13"),
            "mirrormaker2": _jar_version("mirrormaker", "connect-mirror"),
            "kafka_clients": _jar_version("mirrormaker", "kafka-clients"),
            "spark": pyspark.__version__,
            "python": platform.python_version(),
            "java": _java_version(),
            "confluent_kafka": confluent_kafka.__version__,
            "librdkafka": confluent_kafka.libversion()[0],
        },
    }


def environment_text(env: dict) -> str:
    """One paragraph naming the machine and the versions."""
    machine, versions = env["machine"], env["versions"]
    return (
        f"Machine: {machine['cpu_cores']} cores ({machine['cpu_model']}), "
        f"{machine['memory_gib']} GiB memory, {machine['os']}. Apache Kafka "
        f"{versions['kafka_broker']} (brokers and MirrorMaker 2 {versions['mirrormaker2']}), "
        f"Spark {versions['spark']}, Python {versions['python']}, {versions['java']}, "
        f"confluent-kafka {versions['confluent_kafka']} (librdkafka {versions['librdkafka']}), "
        f"Mirrorline engine ({' and '.join(d + '/' for d in ENGINE_DIRS)}) at commit "
        f"{versions['mirrorline_commit']}."
    )


def save_result(kind: str, script: str, argv: list[str], runs: list[dict]) -> Path:
    """Write `results/<kind>-<UTC date and time>.json`: the command, the runs and the
    environment; returns its path."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d-%H%M")
    out = REPO / "benchmarks" / "results" / f"{kind}-{stamp}.json"
    document = {"command": [script, *argv], "runs": runs, "environment": environment()}
    out.write_text(json.dumps(document, indent=2) + "\n")
    return out
