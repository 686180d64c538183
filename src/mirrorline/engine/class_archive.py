"""A class-data-sharing archive of the driver's JVM, so Spark's classes load once per host.

Much of a Spark session's start, and of its first query's, is the JVM finding,
parsing and verifying thousands of Spark's classes. The JVM's class-data
sharing (CDS) writes the classes a JVM loaded into an archive as it exits, and
later JVMs map that archive instead of loading the classes again.
Measured on the 2-core machine: a session starts in 2.8 s instead of 4.2 and
its first query takes 1.3 s instead of 1.95; a driver copies its first record
about 2.6 s sooner (benchmarks/RESULTS.md, "Start-up").

The protocol:

- `mirrorline setup` builds the archive (`build`): a child process starts a
  session with Mirrorline's settings, runs a batch and a streaming query and
  the Kafka source's offset lookup (against no broker: it loads the Kafka client
  classes, then gives up), stops the session and closes its JVM, which writes
  the archive as it exits (`-XX:ArchiveClassesAtExit`).
- It writes under a temporary name, renamed to the archive's name only after
  that JVM exited cleanly: a JVM that maps a truncated archive crashes.
- An archive fits one JVM build and one class path, checked by path. Its name
  carries a key of both places and one of what is there
  (`class-archive/driver-<where>-<what>.jsa` in the jar cache), so each
  installation sharing a cache has its own, and a new Java or PySpark looks for
  a new one (the build removes the one it replaces); a JVM given one that does
  not fit anyway warns once and runs without it.
- Drivers use the archive when it is there (`java_option`) and start as before
  when it is not; nothing else depends on it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mirrorline import jvm

DIRECTORY = "class-archive"
BUILD_TIMEOUT_S = 600.0


def archive_path() -> Path:
    """Where the archive for this host's Java and PySpark is (or would be)."""
    return jvm.jar_cache_dir() / DIRECTORY / _name()


def java_option() -> str:
    """The option that maps the archive into a driver's JVM; empty when there is none."""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path}" if path.is_file() else ""


def build(progress: Callable[[str], None] | None = None) -> Path:
    """Build the archive unless it exists; its path. Raises `JvmSetupError` on failure."""
    path = archive_path()
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    if progress:
        progress("building the driver's class archive (a Spark session, about 20 s)")
    partial = path.with_name(f".{path.stem}-{os.getpid()}.partial")  # the JVM creates it
    try:
        done = subprocess.run(
            [sys.executable, "-m", __name__, str(partial)],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        if done.returncode != 0 or not partial.is_file():
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
            raise jvm.JvmSetupError(
                f"could not build the class archive {path} (exit code {done.returncode}): {tail}"
            )
        partial.replace(path)
    except subprocess.TimeoutExpired:
        raise jvm.JvmSetupError(
            f"building the class archive {path} took over {BUILD_TIMEOUT_S:.0f} s"
        ) from None
    finally:
        partial.unlink(missing_ok=True)
    # Older builds for the same Java and PySpark paths (an upgrade) go; other
    # installations sharing the cache keep theirs.
    where = path.name.rsplit("-", 1)[0]
    for old in path.parent.glob(f"{where}-*.jsa"):
        if old != path:
            old.unlink(missing_ok=True)
    return path


def _name() -> str:
    """`driver-<where>-<what>.jsa`: the paths of Java and of Spark's jars (the JVM checks
    the class path it was dumped with by path), then their builds (sizes and times)."""
    from mirrorline.engine.session import pyspark_jars_dir

    java = Path(jvm.java_executable()).resolve()
    jars = pyspark_jars_dir()
    where = [str(java), str(jars)]
    what = [str(java.stat().st_size), str(java.stat().st_mtime_ns)]
    what += sorted(f"{j.name}:{j.stat().st_size}" for j in jars.glob("*.jar"))
    return f"driver-{_digest(where)}-{_digest(what)}.jsa"


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def _write(partial: Path) -> None:
    """In the child process: run Spark as a driver does, then let its JVM exit and dump."""
    from pyspark import SparkContext

    from mirrorline.engine.session import build_spark_session

    spark = build_spark_session("mirrorline class archive", archive_to=partial)
    spark.range(1_000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    with tempfile.TemporaryDirectory() as checkpoint:
        query = (
            spark.readStream.format("rate")
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .start()
        )
        deadline = time.monotonic() + 120
        while not query.recentProgress and time.monotonic() < deadline:
            query.awaitTermination(0.5)
        query.stop()
    # The Kafka client classes that a flow's source and first batch load, against no
    # broker: the source's offset lookup builds its clients, then gives up.
    try:
        (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", "127.0.0.1:9")
            .option("subscribe", "mirrorline.class-archive")
            .option("kafka.default.api.timeout.ms", "2000")
            .option("kafka.request.timeout.ms", "1000")
            .option("fetchOffset.numRetries", "1")
            .load()
            .count()
        )
    except Exception:  # noqa: BLE001 - expected: there is no broker
        pass
    gateway = SparkContext._gateway
    spark.stop()
    # The JVM exits (and writes the archive) when its standard input closes.
    process = gateway.proc  # type: ignore[union-attr]
    process.stdin.close()
    sys.exit(process.wait(BUILD_TIMEOUT_S))


if __name__ == "__main__":
    _write(Path(sys.argv[1]))
