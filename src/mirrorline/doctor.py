"""Whether Mirrorline can run on this host, and use the clusters of a configuration.

A driver that cannot start says why only after Spark has started, and a
cluster that refuses it answers "transport failure" from deep inside Spark's
executors. `mirrorline doctor` asks the same questions up front. Each answer
is a `Finding`: ok with what was found, or a problem with its cause and its
fix, one line each. Nothing is changed on the way: jars are never fetched
(that is `mirrorline setup`), topics never created, ACLs never granted.

This module checks the host: Java 17+, the writer jar inside the package,
the jar sets in the jar cache, and PySpark's version against Spark's Kafka
connector there (they must be the same Spark release). A missing `kafka` set
is only a warning: only `mirrorline dev up` needs it. The clusters of a
configuration are `doctor_clusters`' part.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mirrorline import jar_fetch, jvm

__all__ = [
    "Finding",
    "Severity",
    "check_host",
    "check_jar_sets",
    "check_java",
    "check_pyspark",
    "check_writer",
    "connector_versions",
    "exit_code",
    "split_fix",
]

Severity = Literal["error", "warning"]

CONNECTOR = "spark-sql-kafka-0-10_2.13"
_SETUP_FIX = (
    "run `mirrorline setup` (fetches them from Maven Central into {cache}), or point "
    f"--jvm-lib / ${jvm.JVM_LIB_ENV} at a jar cache that `mirrorline setup` filled elsewhere"
)


@dataclass(frozen=True)
class Finding:
    """One check's answer: `detail` says what was found, or the cause of a problem.

    A problem's `detail` names its subject (the cluster, the jar set) so that it
    reads alone; `fix` says what to do. A `warning` is a problem that does not
    stop Mirrorline from replicating.
    """

    check: str
    ok: bool
    detail: str
    fix: str = ""
    severity: Severity = "error"

    @classmethod
    def problem(cls, check: str, cause: str, fix: str, severity: Severity = "error") -> Finding:
        """A problem whose detail starts with the check's name, so that it reads alone."""
        return cls(check, False, f"{check}: {cause}", fix, severity)

    @property
    def fails(self) -> bool:
        """Whether this finding makes `mirrorline doctor` fail (exit code 1)."""
        return not self.ok and self.severity == "error"


def exit_code(findings: Iterable[Finding]) -> int:
    """1 when a finding fails, else 0 (warnings included)."""
    return 1 if any(f.fails for f in findings) else 0


def check_host() -> list[Finding]:
    """Java, the writer jar, the jar sets and PySpark, in that order."""
    cache = jvm.jar_cache_dir()
    found = [check_java(), check_writer()]
    try:
        import pyspark
    except ImportError:  # the jar sets' versions follow PySpark's: nothing more to compare
        return [
            *found,
            Finding.problem("pyspark", "PySpark is not installed", "pip install pyspark"),
        ]
    connector = jar_fetch.jar_set("spark-kafka").coordinates[0].rsplit(":", 1)[1]
    return [*found, *check_jar_sets(cache), *check_pyspark(cache, pyspark.__version__, connector)]


def check_java() -> Finding:
    try:
        java = jvm.java_executable()
        version = jvm.java_major_version(java)
    except jvm.JvmSetupError as exc:
        cause, fix = split_fix(str(exc))
        return Finding.problem(
            "java", cause, fix or f"install Java {jvm.MIN_JAVA}+, or set JAVA_HOME"
        )
    return Finding("java", True, f"{java} ({version})")


def check_writer() -> Finding:
    try:
        return Finding("writer jar", True, str(jvm.writer_jar()))
    except jvm.JvmSetupError as exc:
        return Finding.problem("writer jar", *split_fix(str(exc)))


def check_jar_sets(cache: Path) -> list[Finding]:
    """Each fetched jar set, complete in `cache` for this installation (never fetched here).

    A Spark Kafka connector of another version is left to `check_pyspark`,
    which names both versions.
    """
    findings = []
    for name in jar_fetch.JAR_SETS:
        wanted, where, check = jar_fetch.jar_set(name), cache / name, f"jars {name}"
        if jar_fetch.is_complete(name, cache):
            findings.append(
                Finding(check, True, f"{len(list(where.glob('*.jar')))} jars in {where}")
            )
            continue
        if name == "spark-kafka" and connector_versions(where):
            continue
        severity: Severity = "warning" if name == "kafka" else "error"  # only for `dev up`
        cause = f"{wanted.purpose} ({wanted.coordinates[0]}) is not in {where}"
        findings.append(Finding.problem(check, cause, _SETUP_FIX.format(cache=cache), severity))
    return findings


def check_pyspark(cache: Path, version: str, connector: str) -> list[Finding]:
    """PySpark `version` against Spark's Kafka connector: they must be the same release.

    `connector` is the version Mirrorline fetches (`jar_fetch`); the cache must
    hold that very jar.
    """
    fix = "run `mirrorline setup`: it fetches the connector matching PySpark"
    if connector != version:
        cause = f"PySpark is {version} but Mirrorline fetches Spark's Kafka connector {connector}"
        return [Finding.problem("pyspark", cause, f"install PySpark {connector}")]
    directory = cache / "spark-kafka"
    found = connector_versions(directory)
    if version in found:
        return [Finding("pyspark", True, f"{version}, Spark's Kafka connector {version}")]
    if found:
        others = ", ".join(sorted(found))
        cause = f"PySpark is {version} but {directory} holds Spark's Kafka connector {others}"
        return [Finding.problem("pyspark", cause, fix)]
    if jar_fetch.is_complete("spark-kafka", cache):  # fetched, then the connector removed
        cause = f"{directory} has no {CONNECTOR}-{version}.jar"
        return [Finding.problem("pyspark", cause, fix)]
    return []  # no connector at all: `check_jar_sets` says so


def connector_versions(directory: Path) -> dict[str, Path]:
    """Version -> jar of each Spark Kafka connector in `directory`."""
    prefix = f"{CONNECTOR}-"
    return {j.name[len(prefix) : -len(".jar")]: j for j in directory.glob(f"{prefix}*.jar")}


def split_fix(message: str) -> tuple[str, str]:
    """A `JvmSetupError` message (`cause (detail): fix`) as (cause, fix); fix may be ''."""
    depth = 0
    for index, char in enumerate(message):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and message.startswith(": ", index):
            return message[:index], message[index + 2 :]
    return message, ""
