"""Fetching the jar sets Mirrorline does not ship from Maven Central, once per cache.

A wheel carries Mirrorline's own writer jar, but not Spark's Kafka connector nor a
Kafka broker: they are tens of megabytes, public on Maven Central, and their
versions follow what is installed (the connector must equal PySpark's version).
They are fetched the way Spark fetches `spark.jars.packages`: with the Apache Ivy
that every PySpark ships (`pyspark/jars/ivy-*.jar`), which resolves a Maven
artifact with its runtime dependencies. So Java and PySpark are the only
prerequisites, and there is one resolver whatever the host.

Each set is retrieved into a fresh directory beside its place in the cache and
moved there when complete, with a `.resolved` file naming its coordinates: a set
whose coordinates changed (PySpark upgraded) is fetched again, an interrupted
fetch leaves nothing half-filled, and a complete one costs nothing later. A lock
file keeps two processes from fetching into one cache at once.

The repository is Maven Central unless `MIRRORLINE_MAVEN_REPOSITORY` names a mirror
(a corporate proxy of Central).
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

from mirrorline.jvm import JVM_LIB_ENV, JvmSetupError, java_executable

KAFKA_VERSION = "4.3.1"
# Kafka Connect's transforms at the version of the kafka-clients that Spark's connector
# brings (jvm/writer/pom.xml, spark.kafka.clients.version): the writer runs them on
# executors beside that client.
CONNECT_VERSION = "3.9.2"
# Kafka's broker logs through log4j2 via slf4j 2; the broker brings log4j-core.
LOG4J_VERSION = "2.25.4"
REPOSITORY_ENV = "MIRRORLINE_MAVEN_REPOSITORY"
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2/"
RESOLVED = ".resolved"
FETCH_TIMEOUT = 900.0
# Tries of one fetch: a transfer from Central breaks off now and then, and what Ivy
# already downloaded stays in its cache, so a second try costs little.
ATTEMPTS = 3
RETRY_PAUSE = 5.0

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JarSet:
    name: str
    purpose: str
    # Maven coordinates `group:artifact:version`, fetched with their runtime dependencies.
    coordinates: tuple[str, ...]
    # Coordinates fetched alone, without their dependencies.
    alone: tuple[str, ...] = ()

    @property
    def listed(self) -> str:
        """Every coordinate, as messages show them."""
        return ", ".join(self.coordinates + self.alone)

    @property
    def resolved(self) -> list[str]:
        """What the set's `.resolved` file lists: every coordinate, the lone ones marked."""
        return [*self.coordinates, *(f"{c}@alone" for c in self.alone)]


def _pyspark_version() -> str:
    import pyspark

    return pyspark.__version__


def _sets() -> dict[str, JarSet]:
    return {
        "spark-kafka": JarSet(
            "spark-kafka",
            "Spark's Kafka connector, for the driver and its executors",
            (f"org.apache.spark:spark-sql-kafka-0-10_2.13:{_pyspark_version()}",),
        ),
        "connect-transforms": JarSet(
            "connect-transforms",
            "Kafka Connect's single message transforms, for the writer on executors",
            (f"org.apache.kafka:connect-transforms:{CONNECT_VERSION}",),
        ),
        "kafka": JarSet(
            "kafka",
            "an Apache Kafka broker, for `mirrorline dev up`",
            (
                f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
                "org.slf4j:slf4j-api:2.0.17",
                f"org.apache.logging.log4j:log4j-slf4j2-impl:{LOG4J_VERSION}",
            ),
        ),
        # connect-mirror alone: its own dependencies are Connect's runtime and a web
        # server, which the interfaces (and MM2's default filters) do not need.
        "mm2-interfaces": JarSet(
            "mm2-interfaces",
            "MirrorMaker 2's interfaces, for a file's own Java policy and filters",
            (
                f"org.apache.kafka:connect-mirror-client:{KAFKA_VERSION}",
                f"org.apache.kafka:connect-api:{KAFKA_VERSION}",
            ),
            alone=(f"org.apache.kafka:connect-mirror:{KAFKA_VERSION}",),
        ),
    }


#: The sets `mirrorline setup` fetches and `mirrorline doctor` checks.
JAR_SETS: tuple[str, ...] = ("spark-kafka", "connect-transforms", "kafka")
#: Fetched only for files that name Java classes of their own (`java_bridge`), or by
#: `mirrorline setup --java-plugins`.
PLUGIN_INTERFACES = "mm2-interfaces"
FETCHABLE: tuple[str, ...] = (*JAR_SETS, PLUGIN_INTERFACES)


def jar_set(name: str) -> JarSet:
    return _sets()[name]


def is_complete(name: str, cache: Path) -> bool:
    """Whether the cache holds set `name` at the coordinates this installation needs."""
    marker = cache / name / RESOLVED
    try:
        return marker.read_text().split() == jar_set(name).resolved
    except OSError:
        return False


def ensure(name: str, cache: Path, progress: Callable[[str], None] | None = None) -> list[Path]:
    """The jars of set `name` in `cache`, fetched first unless already complete."""
    if not is_complete(name, cache):
        fetch(name, cache, progress)
    return sorted((cache / name).glob("*.jar"))


def fetch(name: str, cache: Path, progress: Callable[[str], None] | None = None) -> None:
    """Resolve set `name` from the repository into `cache/name` (see the module)."""
    wanted = jar_set(name)
    say = progress or _log.info
    repository = os.environ.get(REPOSITORY_ENV) or MAVEN_CENTRAL
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise JvmSetupError(
            f"cannot create the jar cache {cache}: {exc.strerror or exc} "
            f"(choose another with --jvm-lib DIR or {JVM_LIB_ENV})"
        ) from None
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_complete(name, cache):  # another process fetched it while we waited
            return
        say(f"fetching {wanted.purpose} ({wanted.listed}) from {repository}")
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=cache))
        try:
            _retrieve(wanted, repository, cache / ".ivy", staging)
            (staging / RESOLVED).write_text("\n".join(wanted.resolved) + "\n")
            final = cache / name
            if final.exists():
                shutil.rmtree(final)
            staging.rename(final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    jars = list((cache / name).glob("*.jar"))
    size = sum(j.stat().st_size for j in jars) / 1e6
    say(f"{name}: {len(jars)} jars, {size:.0f} MB in {cache / name}")


def _retrieve(wanted: JarSet, repository: str, ivy_cache: Path, into: Path) -> None:
    """Run Ivy, again after a pause when a transfer broke off (see `ATTEMPTS`)."""
    work = into / ".ivy-files"
    work.mkdir()
    module = work / "ivy.xml"
    module.write_text(_module_xml(wanted))
    settings = work / "ivysettings.xml"
    settings.write_text(_settings_xml(repository))
    command = [
        java_executable(), "-cp", str(_ivy_jar()), "org.apache.ivy.Main",
        "-settings", str(settings), "-ivy", str(module), "-cache", str(ivy_cache),
        "-confs", "default", "-types", "jar", "bundle", "-warn",
        "-retrieve", f"{into}/[artifact]-[revision](-[classifier]).[ext]",
    ]  # fmt: skip
    reason = ""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=FETCH_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            reason = "no answer"
            continue
        if done.returncode == 0 and list(into.glob("*.jar")):
            shutil.rmtree(work)
            return
        reason, missing = _failure(done.stdout + done.stderr)
        if missing:  # the repository answered: it does not have the artifact
            break
        if attempt < ATTEMPTS:
            _log.warning("fetching %s failed (%s); trying again", wanted.name, reason)
            time.sleep(RETRY_PAUSE * attempt)
    shutil.rmtree(work, ignore_errors=True)
    raise JvmSetupError(_cannot_fetch(wanted, repository, reason))


def _failure(output: str) -> tuple[str, bool]:
    """Why Ivy failed, and whether the artifact is missing (a retry cannot help)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    missing = next((ln for ln in lines if "UNRESOLVED" in ln or "not found" in ln), "")
    if missing:
        return missing, True
    # A broken transfer ends in a Java stack trace: its deepest cause says why.
    thrown = [ln for ln in lines if "Exception" in ln and not ln.startswith("at ")]
    return (thrown or lines or ["Ivy exited with no message"])[-1], False


def _cannot_fetch(wanted: JarSet, repository: str, reason: str) -> str:
    setup = "mirrorline setup" + (" --java-plugins" if wanted.name == PLUGIN_INTERFACES else "")
    return (
        f"cannot fetch {wanted.purpose} ({wanted.listed}) from {repository}: "
        f"{reason}. Either run `{setup}` on a host that reaches Maven Central "
        f"(or set {REPOSITORY_ENV} to a mirror of it), or copy a jar cache that "
        f"`{setup}` filled elsewhere and point {JVM_LIB_ENV} (or --jvm-lib) at it"
    )


def _ivy_jar() -> Path:
    import pyspark

    found = sorted((Path(pyspark.__file__).parent / "jars").glob("ivy-*.jar"))
    if not found:
        raise JvmSetupError(
            "PySpark's jars/ has no ivy-*.jar to fetch jars with: reinstall pyspark"
        )
    return found[-1]


def _module_xml(wanted: JarSet) -> str:
    lines = [(c, "") for c in wanted.coordinates]
    lines += [(c, ' transitive="false"') for c in wanted.alone]
    dependencies = "\n".join(
        f"    <dependency org={quoteattr(group)} name={quoteattr(artifact)} "
        f'rev={quoteattr(version)} conf="default->default(runtime)"{extra}/>'
        for (group, artifact, version), extra in ((c.split(":"), x) for c, x in lines)
    )
    return (
        '<ivy-module version="2.0">\n'
        f'  <info organisation="io.mirrorline" module="jars-{wanted.name}"/>\n'
        '  <configurations><conf name="default"/></configurations>\n'
        f"  <dependencies>\n{dependencies}\n  </dependencies>\n"
        "</ivy-module>\n"
    )


def _settings_xml(repository: str) -> str:
    return (
        "<ivysettings>\n"
        '  <settings defaultResolver="maven"/>\n'
        "  <resolvers>\n"
        f'    <ibiblio name="maven" m2compatible="true" root={quoteattr(repository)}/>\n'
        "  </resolvers>\n"
        "</ivysettings>\n"
    )
