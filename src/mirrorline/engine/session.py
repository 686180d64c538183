"""The one place a Spark session is built, so every Mirrorline process runs Spark alike.

Defaults suit one machine (`local[*]`, 2 cores / 24 GiB is the smallest we plan for);
`master` points the same code at a Spark cluster (standalone, YARN, Kubernetes), with
the driver in this process (client mode). The jars executors need are the writer
in this package and Spark's Kafka connector in the jar cache (fetched from Maven
Central on first use, see `mirrorline.jvm`), and reach the executors through Spark
itself: `spark.jars` names local files that the driver serves to every executor,
whatever the cluster manager. Executors run no Python, so nothing else is shipped.

Spark's JVM is shielded from the signals that ask the driver to stop: it runs in a
session of its own (a signal to the driver's process group, such as a terminal's
Ctrl-C or `kill -TERM -PGID`, does not reach it) and ignores SIGINT and SIGTERM (a
service manager that signals every process of the service, such as systemd's
default KillMode=control-group, does not stop it either). Only the Python driver
hears them: it stops its flows between batches, saves their progress and then
stops Spark itself. The JVM still ends with the driver however the driver ends: it
exits when its standard input, a pipe from the driver, closes.

Nothing else of the driver's host is needed by executors. The streaming checkpoint
directory (under the driver's `--work-dir`) is written only by the driver: Spark's
micro-batch engine keeps its offset, commit and metadata logs on the driver, and
only stateful operators (aggregations, joins, deduplication) have executors write
state there; Mirrorline's query has none. So the directory may be a local path on
the driver's host, whatever the cluster.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from mirrorline import jvm
from mirrorline.engine import class_archive
from mirrorline.engine.jvm_options import fixed_heap, young_generation

DEFAULT_MASTER = "local[*]"

_log = logging.getLogger(__name__)

# Set only while Spark's JVM is being launched: the child forked then ignores SIGTERM
# before it executes `spark-submit` (an ignored signal stays ignored across exec,
# and the JVM installs no handler for a shutdown signal it finds ignored).
_launching_jvm = False


def _ignore_sigterm_in_jvm_child() -> None:
    if _launching_jvm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


# Runs in children forked with a preexec function, as PySpark launches the JVM.
os.register_at_fork(after_in_child=_ignore_sigterm_in_jvm_child)

# The jar sets (see `mirrorline.jvm`) that executors load, in order: Spark's Kafka
# connector, Kafka Connect's transforms and Mirrorline's writer. The transforms go
# always, not only for flows that have some: they add well under a megabyte (Spark
# has the Kafka client they use), and one classpath for every flow is simpler to
# reason about than one that changes with the file.
EXECUTOR_JAR_SETS: tuple[str, ...] = ("spark-kafka", "connect-transforms", "mirrorline-writer")

# Every JVM that runs tasks (the executors; in local mode the driver's) keeps
# HotSpot's optimising compiler for the per-record path only: Spark's, Scala's and
# Netty's code that runs once a task or a heartbeat is compiled by C1 alone. The
# plugin (in the writer's jar) adds the writer's compiler directives as the executor
# starts; the why and the measurements are in its Javadoc and in
# benchmarks/RESULTS.md ("Spark's own code without C2"). Not for a driver with a
# real-time flow: its tasks run for the query's life, so what C2 compiles once
# pays off, and with the directives a steady stream's record-age p99 was 139 ms
# against 58 without, MirrorMaker 2 tuned 86 and 134 beside each (RESULTS.md,
# "Real-time mode without the compiler directives"). A `spark.plugins` of the
# user's is kept beside it.
PLUGIN = "io.mirrorline.writer.CompilerDirectives"

# Conservative for a 2-core / 24 GiB machine: the driver plans micro-batches and runs
# control loops; in local mode its JVM also runs the tasks that move the records.
DEFAULT_CONF: Mapping[str, str] = {
    "spark.driver.memory": "2g",
    # Used on clusters only (local mode runs tasks in the driver's JVM). An executor
    # reads a task's records and hands them to the writer's producer one by one, and
    # keeps no state: 1g is ample, and fits a small worker.
    "spark.executor.memory": "1g",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.showConsoleProgress": "false",
    # No web UI: a driver is a daemon that Mirrorline's own status and monitoring
    # service report on, and Spark's UI would open an unauthenticated port on the
    # driver's host (one that can kill jobs) and spend start-up and per-batch CPU
    # on its listeners: a driver copied its first record about 0.2 s sooner
    # without it (benchmarks/RESULTS.md, "Spark's web UI"). `--spark-conf
    # spark.ui.enabled=true` brings it back, to look at Spark's jobs and stages.
    "spark.ui.enabled": "false",
    # Mirrorline keeps its own progress in Kafka; a lost temporary checkpoint is fine.
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    "spark.sql.adaptive.enabled": "false",
    # No whole-stage code generation. A micro-batch's rows are never computed (the
    # writer reads the batch's offset ranges from its plan and its tasks read the
    # source themselves: `batch_writer`), yet Spark generated and compiled the plan's
    # projection for every batch, and the first one loaded the Janino compiler (from
    # a signed jar, which the class archive cannot hold): 0.3-0.6 s later first
    # records and about a tenth of the driver's CPU on a steady stream. A real-time
    # query's plan is a scan feeding the foreach sink, with nothing to fuse: its
    # compile delayed the tasks' start by 0.3-0.5 s, and a steady stream cost the
    # same CPU per GB without it (benchmarks/RESULTS.md, "Whole-stage code
    # generation off" and "Real-time start-up without the plan's compile").
    "spark.sql.codegen.wholeStage": "false",
    # A driver runs for weeks and starts a job every micro-batch. Spark's status
    # store (what its UI shows, kept with the UI off too) keeps the last 1,000
    # jobs, stages and SQL executions and 100,000 tasks by default: at a batch a
    # second per flow, heap that fills for the first quarter hour or more. A
    # hundred batches' worth is plenty to look at one.
    "spark.ui.retainedJobs": "100",
    "spark.ui.retainedStages": "100",
    "spark.ui.retainedTasks": "2000",
    "spark.sql.ui.retainedExecutions": "100",
    "spark.sql.session.timeZone": "UTC",
    # Executors report to the driver once a second (Spark's default: every ten);
    # a driver with a real-time flow, four times (`REAL_TIME_CONF`).
    "spark.executor.heartbeatInterval": "1s",
    # Spark redacts settings and source options whose name matches these when it
    # shows or logs them; Kafka's `sasl.jaas.config` holds a password in its value.
    "spark.redaction.regex": r"(?i)secret|password|token|access[.]?key|jaas|credential",
    "spark.sql.redaction.options.regex": r"(?i)url|jaas|password|secret|token",
}

# Real-time tasks report what the target settled as often as their executor's
# heartbeats carry the reports (`engine.real_time`), so this sets how often: four
# times a second. As many heartbeats keep offset syncs and progress about half a
# second behind the records, where one a second left them up to two seconds
# behind (benchmarks/RESULTS.md, "Real-time checkpoints"). Only for real-time
# flows: every heartbeat costs each executor some CPU, and micro-batch flows
# report with their batches.
REAL_TIME_CONF = {"spark.executor.heartbeatInterval": "250ms"}


def executor_jars(
    jar_sets: Iterable[str] = EXECUTOR_JAR_SETS, progress: Callable[[str], None] | None = None
) -> list[Path]:
    """The jars of `jar_sets` that Spark does not have yet, each artifact once.

    Maven resolves each set with its full dependency tree (Hadoop client, Scala
    library, ...). Adding a second copy of a jar Spark already has would at best
    waste memory and at worst mix versions, so a jar is used only if neither
    PySpark nor an earlier set has its artifact.
    """
    known = {_artifact_name(p) for p in pyspark_jars_dir().glob("*.jar")}
    chosen = []
    for jar_set in jar_sets:
        for jar in jvm.jars(jar_set, progress):
            name = _artifact_name(jar)
            if name not in known:
                known.add(name)
                chosen.append(jar)
    return chosen


def build_spark_session(
    app_name: str = "mirrorline",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    log_level: str = "WARN",
    log_json: bool = False,
    archive_to: Path | None = None,
    real_time: bool = False,
):
    """Create (or return the running) Spark session with Mirrorline's settings.

    `conf` overrides the defaults, except that its `spark.jars` and `spark.plugins`
    are added to Mirrorline's instead of replacing them. The master comes from the
    argument, then `MIRRORLINE_SPARK_MASTER`, then `local[*]`. `log_json`: the driver's JVM logs
    one JSON object per line, as `mirrorline --log-format json` does. `archive_to`:
    the JVM writes its class archive there as it exits (`engine.class_archive`),
    instead of mapping the one there is. `real_time`: a flow of the driver runs in
    real-time mode (`REAL_TIME_CONF`, below `conf`).
    """
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    jvm.java_executable()  # a clear error now beats a JVM launch failure later
    # Executors run no Python: the writer is a jar (EXECUTOR_JAR_SETS), and the
    # driver's per-batch function runs in this process.
    master = master or os.environ.get("MIRRORLINE_SPARK_MASTER") or DEFAULT_MASTER
    conf = dict(conf or {})

    settings = dict(DEFAULT_CONF)
    settings.update(cluster_settings(master))
    if real_time:
        settings.update(REAL_TIME_CONF)
    log_files = ["spark-log4j2.properties"] + (["spark-log4j2-json.properties"] * log_json)
    log_config = ",".join(
        f"file:{resources.files('mirrorline.resources') / name}" for name in log_files
    )
    # Larger thread stacks: Spark matches regular expressions against whole error
    # texts when a query stops (to tell interruptions from failures), and a long
    # Python traceback overflowed the default 1 MiB stack of the stream thread.
    settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={log_config} -Xss16m"
    # Not the log configuration: its path exists on the driver's host only, and
    # executors log where their cluster manager puts executor logs.
    settings["spark.executor.extraJavaOptions"] = "-Xss16m"
    jars = [str(j) for j in executor_jars(progress=_log.info)]
    settings["spark.jars"] = added_to(jars, conf.pop("spark.jars", ""))
    plugins = [] if real_time else [PLUGIN]
    settings["spark.plugins"] = added_to(plugins, conf.pop("spark.plugins", ""))
    settings.update(conf)
    if "spark.executor.extraJavaOptions" not in conf:
        young = young_generation(
            settings["spark.executor.memory"], "spark.executor.memory", real_time
        )
        settings["spark.executor.extraJavaOptions"] = f"-Xss16m {young}"
    if "spark.driver.extraJavaOptions" not in conf:
        archive = (
            f"-XX:ArchiveClassesAtExit={archive_to}" if archive_to else class_archive.java_option()
        )
        if not archive:
            _log.info("no class archive for this Java and Spark: `mirrorline setup` builds one")
        options = [settings["spark.driver.extraJavaOptions"]]
        memory = settings["spark.driver.memory"]
        young = young_generation(memory, "spark.driver.memory", real_time)
        options += fixed_heap(memory) + [young, archive] + driver_compilation(master)
        settings["spark.driver.extraJavaOptions"] = " ".join(filter(None, options))

    spark_conf = SparkConf(loadDefaults=False).setAppName(app_name).setMaster(master)
    spark_conf.setAll(list(settings.items()))
    _launch_jvm_in_own_session(spark_conf)
    session = SparkSession.builder.config(conf=spark_conf).getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    return session


def added_to(ours: Iterable[str], theirs: str) -> str:
    """A comma-separated Spark list: `ours`, then `theirs`, each non-empty entry once."""
    entries = (entry.strip() for entry in [*ours, *theirs.split(",")])
    return ",".join(dict.fromkeys(entry for entry in entries if entry))


def driver_compilation(master: str) -> list[str]:
    """Java options for the driver JVM's just-in-time compilers: on a cluster, C1 only.

    With executors of its own (`master` not local) the driver's JVM moves no
    record: it plans a micro-batch every 200 ms, schedules its tasks and hands
    results to the Python driver, code that runs a few times a second and
    touches thousands of Spark's methods once each. HotSpot's optimising
    compiler (C2) reaches them one by one, as each crosses its threshold,
    for as long as the driver runs: measured on a standalone cluster
    (`benchmarks/driver_cpu.py`), two minutes into a steady stream it still
    took 0.20-0.22 of the driver JVM's 0.44-0.46 cores. With the client
    compiler alone (`-XX:TieredStopAtLevel=1`) the JVM used 0.25-0.28 cores
    and the thread that plans the batches no more than before (0.11-0.13).
    In local mode the tasks run in this JVM, and their per-record path needs
    C2 (C1's code took twice the CPU per record over ten million records).
    """
    return [] if _local(master) else ["-XX:TieredStopAtLevel=1"]


def _launch_jvm_in_own_session(conf) -> None:
    """Start Spark's JVM as PySpark would, but as the leader of a new session (see the module).

    Settings that shape the JVM itself (memory, Java options, jars) must be given at
    its launch, so the JVM gets `conf` whole, the settings the session is built with.
    """
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # a JVM runs already (tests, a second session)
        return
    global _launching_jvm
    _launching_jvm = True
    try:
        gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})
    finally:
        _launching_jvm = False
    SparkContext._ensure_initialized(gateway=gateway)


def cluster_settings(master: str) -> dict[str, str]:
    """What a driver needs when its executors are other processes, possibly on other hosts.

    Executors open connections to the driver (task results, the jars it serves),
    so the driver must advertise an address they can reach. Spark's default is
    this host's name, which may resolve to nothing the executors reach (or to
    loopback while they run elsewhere). The address this host uses to reach the
    master is one they can reach: the master's network is theirs. For a master on
    loopback that is 127.0.0.1, and the driver listens there only. Local masters
    need nothing; masters without a host in their URL (`yarn`) keep Spark's default.
    """
    if _local(master):
        return {}
    address = _address_towards(master)
    return {"spark.driver.host": address} if address else {}


def executor_task_slots(spark) -> int:
    """The most tasks one executor of `spark` runs at once.

    In local mode, `local[N]`'s N (Spark's default parallelism); on a cluster,
    `spark.executor.cores`, or when that is unset (an executor may take a whole
    worker) every core the application has.
    """
    context = spark.sparkContext
    cores = context.getConf().get("spark.executor.cores")
    if cores and not _local(context.master):
        return int(cores)
    return context.defaultParallelism


def _local(master: str) -> bool:
    """Whether `master` runs the executors in the driver's machine (`local`, `local[N]`...)."""
    return master.startswith("local")


def _address_towards(master: str) -> str | None:
    """The local IP address of the route to the master's host, None if it has no host.

    `spark://h1:7077,h2:7077` (standby masters) uses the first; `k8s://https://h:6443`
    (or `k8s://h:6443`) the API server's. A UDP socket's `connect` picks the route
    without sending anything.
    """
    url = master.split(",", 1)[0]
    if url.startswith("k8s://"):
        url = url.removeprefix("k8s://")
        url = url if "://" in url else f"https://{url}"
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or 7077
    except ValueError:
        return None
    if not parts.netloc or not host:
        return None
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect(address)
            return probe.getsockname()[0]
    except OSError:
        return None  # unresolvable or unroutable now: Spark's default, and its error if any


def pyspark_jars_dir() -> Path:
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
