"""Where the JVM side lives: the Java executable and the jar sets from `make jvm`.

`jvm/pom.xml` resolves three jar sets from Maven Central into a cache directory
(`.cache/jvm/<set>/` at the project root, or `$MIRRORLINE_JVM_LIB/<set>/`):

- ``kafka``: an Apache Kafka broker, for dev clusters and integration tests;
- ``spark-kafka``: Spark's Kafka connector at the installed PySpark version;
- ``mirrorline-writer``: Mirrorline's own writer (built from `jvm/writer`), which
  Spark's executors run to write each micro-batch to the target cluster;
- ``mirrormaker``: MirrorMaker 2 and Kafka's command-line tools (``kafka-consumer-groups``),
  for side-by-side benchmarks and compatibility tests.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

MIN_JAVA = 17


class JvmSetupError(RuntimeError):
    """The JVM side is missing or unusable; the message says how to fix it."""


def project_root() -> Path | None:
    """The source checkout this package runs from (editable install), if any."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "jvm" / "pom.xml").is_file() and (parent / "pyproject.toml").is_file():
            return parent
    return None


def jvm_lib_dir() -> Path:
    override = os.environ.get("MIRRORLINE_JVM_LIB")
    if override:
        return Path(override)
    root = project_root()
    if root is None:
        raise JvmSetupError(
            "cannot find the JVM jar cache: set MIRRORLINE_JVM_LIB to the directory that "
            "`make jvm` filled (it holds kafka/, spark-kafka/ and mirrormaker/)"
        )
    return root / ".cache" / "jvm"


def jars(jar_set: str) -> list[Path]:
    """The jars of one set, sorted; a clear error when `make jvm` has not run."""
    directory = jvm_lib_dir() / jar_set
    found = sorted(directory.glob("*.jar"))
    if not found:
        raise JvmSetupError(
            f"no jars in {directory}: run `make jvm` (or `make test` / `make demo`) first"
        )
    return found


def classpath(jar_set: str) -> str:
    return os.pathsep.join(str(j) for j in jars(jar_set))


@cache
def java_executable() -> str:
    """`$JAVA_HOME/bin/java` or `java` on PATH, checked to be Java 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise JvmSetupError(
            f"Java {MIN_JAVA}+ not found: install OpenJDK {MIN_JAVA} or set JAVA_HOME"
        )
    version = java_major_version(java)
    if version < MIN_JAVA:
        raise JvmSetupError(
            f"{java} is Java {version}; Mirrorline needs Java {MIN_JAVA}+ (set JAVA_HOME)"
        )
    return java


def java_major_version(java: str) -> int:
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        raise JvmSetupError(f"cannot read the version of {java}: {out.stderr.strip()}")
    major = int(match.group(1))
    # Java 8 and older report "1.8"
    return int(match.group(2)) if major == 1 else major
