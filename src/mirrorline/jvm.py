"""Where the JVM side lives: the Java executable, the writer jar and the jar sets.

Mirrorline needs three kinds of jars, and none of them is looked for in a source
checkout:

- ``mirrorline-writer``: Mirrorline's own writer (built by Maven from `jvm/writer`),
  which Spark's executors run to write each micro-batch to the target cluster. It
  comes inside the package (`mirrorline/jars/`), so a wheel carries it, with the
  plugin bridge that runs a file's own Java policy and filters (`java_bridge`).
- ``spark-kafka``: Spark's Kafka connector at the installed PySpark version,
  ``kafka``: an Apache Kafka broker for `mirrorline dev up`, and ``mm2-interfaces``:
  MirrorMaker 2's interfaces for a file's own Java classes (`java_bridge`). All are
  fetched from
  Maven Central once (`mirrorline.jar_fetch`, with the Ivy that PySpark ships, as
  `spark.jars.packages` does) into the jar cache, on first use or by
  `mirrorline setup`.
- ``mirrormaker``: MirrorMaker 2 and Kafka's tools, which only benchmarks and
  compatibility tests use; `make jvm` puts them in the checkout's cache.

The jar cache is `$MIRRORLINE_JVM_LIB` (also set by `mirrorline --jvm-lib DIR`),
else `$XDG_CACHE_HOME/mirrorline/jvm` (`~/.cache/mirrorline/jvm`); each set is a
directory of jars in it. An offline host points `MIRRORLINE_JVM_LIB` at a cache
that `mirrorline setup` filled elsewhere.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path

from mirrorline.state_dirs import cache_dir

MIN_JAVA = 17
JVM_LIB_ENV = "MIRRORLINE_JVM_LIB"
WRITER_SET = "mirrorline-writer"
WRITER_JAR = "mirrorline-writer.jar"


class JvmSetupError(RuntimeError):
    """The JVM side is missing or unusable; the message says how to fix it."""


def jar_cache_dir() -> Path:
    """The directory holding one subdirectory of jars per set (see the module)."""
    override = os.environ.get(JVM_LIB_ENV)
    return Path(override).expanduser() if override else cache_dir("jvm")


def writer_jar() -> Path:
    """The writer jar inside the installed package."""
    jar = Path(str(resources.files("mirrorline") / "jars" / WRITER_JAR))
    if not jar.is_file():
        raise JvmSetupError(
            f"this Mirrorline has no writer jar ({jar}): install a wheel built with "
            "`pip wheel .` (it runs Maven), or run `make jvm` in a source checkout"
        )
    return jar


def jars(jar_set: str, progress: Callable[[str], None] | None = None) -> list[Path]:
    """The jars of one set, sorted; fetched from Maven Central first when missing.

    `progress` hears what a fetch is doing. The error when nothing can be found
    names every way to provide the jars.
    """
    if jar_set == WRITER_SET:
        return [writer_jar()]
    from mirrorline import jar_fetch

    if jar_set in jar_fetch.FETCHABLE:
        return jar_fetch.ensure(jar_set, jar_cache_dir(), progress)
    found = sorted((jar_cache_dir() / jar_set).glob("*.jar"))
    if not found:
        raise JvmSetupError(
            f"no jars in {jar_cache_dir() / jar_set}: run `make jvm` in a source checkout "
            f"(or point {JVM_LIB_ENV} at a cache holding {jar_set}/)"
        )
    return found


def classpath(jar_set: str, progress: Callable[[str], None] | None = None) -> str:
    return os.pathsep.join(str(j) for j in jars(jar_set, progress))


@cache
def java_executable() -> str:
    """`$JAVA_HOME/bin/java` or `java` on PATH, checked to be Java 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        where = f"JAVA_HOME={home} has no bin/java" if home else "no `java` on PATH"
        raise JvmSetupError(
            f"Java {MIN_JAVA}+ not found ({where}): install OpenJDK {MIN_JAVA} or newer "
            "(Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
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
