"""The one place a Spark session is built, so every Mirrorline process runs Spark alike.

Defaults suit one machine (`local[*]`, 2 cores / 24 GiB is the smallest we plan for);
`master` points the same code at a Spark cluster. Spark's Kafka connector comes from
the jar cache filled by `make jvm` (see `mirrorline.jvm`), never from the network.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from mirrorline import jvm

DEFAULT_MASTER = "local[*]"

# Conservative for a 2-core / 24 GiB machine: the driver plans micro-batches and runs
# control loops; in local mode its JVM also runs the tasks that move the records.
DEFAULT_CONF: Mapping[str, str] = {
    "spark.driver.memory": "2g",
    "spark.executor.memory": "2g",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.showConsoleProgress": "false",
    # Mirrorline keeps its own progress in Kafka; a lost temporary checkpoint is fine.
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}


def executor_jars() -> list[Path]:
    """Every jar Mirrorline adds to Spark: the Kafka connector and Mirrorline's writer.

    Given as `spark.jars`, so the driver serves them to every executor: nothing
    needs to be installed on a cluster's machines beforehand.
    """
    return [*connector_jars(), *jvm.jars("mirrorline-writer")]


def connector_jars() -> list[Path]:
    """The Kafka connector and its dependencies, minus jars PySpark already ships.

    Maven resolves the connector with its full dependency tree (Hadoop client,
    Scala library, ...). Adding a second copy of a jar Spark already has would at
    best waste memory and at worst mix versions, so only the missing ones are used.
    """
    shipped = {_artifact_name(p) for p in _pyspark_jars_dir().glob("*.jar")}
    return [j for j in jvm.jars("spark-kafka") if _artifact_name(j) not in shipped]


def build_spark_session(
    app_name: str = "mirrorline",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
):
    """Create (or return the running) Spark session with Mirrorline's settings.

    `conf` overrides the defaults. The master comes from the argument, then
    `MIRRORLINE_SPARK_MASTER`, then `local[*]`.
    """
    from pyspark.sql import SparkSession

    jvm.java_executable()  # a clear error now beats a JVM launch failure later
    # Executors' Python workers must run this interpreter (same packages).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    settings = dict(DEFAULT_CONF)
    log_config = resources.files("mirrorline.resources") / "spark-log4j2.properties"
    # Larger thread stacks: Spark matches regular expressions against whole error
    # texts when a query stops (to tell interruptions from failures), and a long
    # Python traceback overflowed the default 1 MiB stack of the stream thread.
    java_options = f"-Dlog4j2.configurationFile=file:{log_config} -Xss16m"
    settings["spark.driver.extraJavaOptions"] = java_options
    settings["spark.executor.extraJavaOptions"] = java_options
    settings["spark.jars"] = ",".join(str(j) for j in executor_jars())
    settings.update(conf or {})

    builder = SparkSession.builder.appName(app_name).master(
        master or os.environ.get("MIRRORLINE_SPARK_MASTER") or DEFAULT_MASTER
    )
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def _pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _artifact_name(jar: Path) -> str:
    """`kafka-clients-3.9.0.jar` -> `kafka-clients` (the name without its version)."""
    parts = jar.stem.split("-")
    for i, part in enumerate(parts):
        # The version is the first part like "3.9.0" (not "0" or "10_2.13" of a name).
        if re.match(r"\d+\.\d+", part):
            return "-".join(parts[:i])
    return jar.stem
