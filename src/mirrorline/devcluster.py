"""Real single-node Apache Kafka clusters on loopback, for trying Mirrorline and for tests.

Each cluster is one JVM running a KRaft broker+controller with its own directory,
cluster id and two free ports (client and controller). Internal topics use
replication factor 1 so that transactions, consumer groups and compaction work on
one node. A set of clusters shares a directory holding:

- ``clusters.json``: what is running (alias, ports, pid), read by `status` and `down`;
- ``clusters.properties``: a ready-to-use MM2-format file naming the clusters;
- ``<alias>/``: the broker's config (``server.properties``, ``layout.json``), data and
  logs (``broker.out``, ``logs/server.log``);
- ``security/``, for clusters started with ``security="sasl_ssl"``: their CA, users
  and broker keys (see `devsecurity`).

What each broker runs and with which settings is `devbroker`'s part.

`stop(alias)` and `start(alias)` take one broker away and bring it back on the
same ports and data, as a broker outage would (for outage tests).

Clusters started with ``die_with_parent=True`` (tests, the demo) are killed by the
kernel if the Python process dies without cleaning up, so no JVM outlives it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

from mirrorline import jvm
from mirrorline.certificates import write_private
from mirrorline.devbroker import Layout, format_command, launch, new_cluster_id, server_properties
from mirrorline.devsecurity import ADMIN_USER, SECURITY_MODES, DevSecurity
from mirrorline.process import (
    pid_alive,
    port_accepts,
    reserve_port,
    tail,
    terminate_child,
    terminate_pid,
)

STATE_FILE = "clusters.json"
LAYOUT_FILE = "layout.json"  # in each cluster's directory: how to start it again
PROPERTIES_FILE = "clusters.properties"
DEFAULT_ALIASES = ("east", "west")

Progress = Callable[[str], None]


class DevClusterError(RuntimeError):
    """A dev cluster could not be started, found or stopped; the message says why."""


@dataclass(frozen=True)
class DevCluster:
    alias: str
    bootstrap_servers: str
    controller_port: int
    cluster_id: str
    directory: str
    pid: int
    security: str = "plaintext"

    @property
    def port(self) -> int:
        return int(self.bootstrap_servers.rsplit(":", 1)[1])


@dataclass(frozen=True)
class ClusterHealth:
    cluster: DevCluster
    process_alive: bool
    reachable: bool


class DevClusters:
    """The dev clusters living in one directory."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).resolve()
        # Processes this object started, so that it can reap them (no zombies).
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    # -- reading state ---------------------------------------------------------------

    def clusters(self) -> list[DevCluster]:
        path = self.directory / STATE_FILE
        if not path.exists():
            return []
        try:
            entries = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DevClusterError(f"cannot read {path}: {exc}") from exc
        return [DevCluster(**entry) for entry in entries]

    def get(self, alias: str) -> DevCluster:
        for cluster in self.clusters():
            if cluster.alias == alias:
                return cluster
        raise DevClusterError(f"no dev cluster named {alias!r} in {self.directory}")

    @property
    def properties_file(self) -> Path:
        return self.directory / PROPERTIES_FILE

    @property
    def security(self) -> DevSecurity:
        return DevSecurity.of(self.directory)

    def client_config(self, cluster: DevCluster | str, user: str = ADMIN_USER) -> dict[str, str]:
        """A librdkafka configuration that connects to `cluster` (as `user` if it is secured)."""
        if isinstance(cluster, str):
            cluster = self.get(cluster)
        if cluster.security == "plaintext":
            return {"bootstrap.servers": cluster.bootstrap_servers}
        return self.security.client_config(cluster.bootstrap_servers, user)

    def health(self) -> list[ClusterHealth]:
        return [ClusterHealth(c, _is_our_broker(c), port_accepts(c.port)) for c in self.clusters()]

    # -- starting --------------------------------------------------------------------

    def up(
        self,
        aliases: Iterable[str] = DEFAULT_ALIASES,
        *,
        die_with_parent: bool = False,
        timeout: float = 120.0,
        progress: Progress | None = None,
        security: str = "plaintext",
    ) -> list[DevCluster]:
        """Start one cluster per alias (added to those already running here).

        `security` is `plaintext` or `sasl_ssl` (see `devsecurity`).
        """
        say = progress or (lambda _msg: None)
        wanted = _checked_aliases(aliases)
        if security not in SECURITY_MODES:
            raise DevClusterError(
                f"unknown security {security!r}: choose {' or '.join(SECURITY_MODES)}"
            )
        running = {c.alias for c in self.clusters()}
        clash = sorted(running.intersection(wanted))
        if clash:
            raise DevClusterError(
                f"dev cluster(s) {', '.join(clash)} already running in {self.directory}; "
                "run `mirrorline dev down` first or pick other names"
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        java = jvm.java_executable()
        classpath = jvm.classpath("kafka", progress)

        started: list[DevCluster] = []
        try:
            with ExitStack() as ports_held:
                ports = [reserve_port(ports_held) for _ in range(2 * len(wanted))]
            if security != "plaintext":
                say("making the certificate authority, broker certificates and users")
                self.security.ensure()
            layouts = [
                self._lay_out(alias, ports[2 * i], ports[2 * i + 1], security)
                for i, alias in enumerate(wanted)
            ]
            say(f"formatting storage for {', '.join(wanted)}")
            _run_all(
                [format_command(java, classpath, lay, self.security) for lay in layouts],
                timeout,
            )
            for lay in layouts:
                say(f"starting {lay.alias} on {lay.bootstrap_servers}")
                popen = launch(java, classpath, lay, die_with_parent)
                self._children[lay.alias] = popen
                started.append(_started(lay, popen.pid))
                self._save(self.clusters() + [started[-1]])
            for cluster in started:
                self._wait_ready(cluster, deadline=time.monotonic() + timeout)
                say(f"{cluster.alias} ready at {cluster.bootstrap_servers}")
        except BaseException:
            # Never leave a half-started set behind (including on Ctrl-C).
            for cluster in started:
                self._stop(cluster)
            self._save([c for c in self.clusters() if c not in started])
            raise
        self._write_properties()
        return started

    def _lay_out(self, alias: str, port: int, controller_port: int, security: str) -> Layout:
        home = self.directory / alias
        if home.exists():
            shutil.rmtree(home)  # a stopped cluster's leftovers: start clean
        (home / "logs").mkdir(parents=True)
        layout = Layout(
            alias=alias,
            bootstrap_servers=f"127.0.0.1:{port}",
            controller_port=controller_port,
            cluster_id=new_cluster_id(),
            directory=str(home),
            security=security,
        )
        settings = server_properties(layout)
        if security != "plaintext":
            settings.update(
                self.security.server_properties(alias, layout.bootstrap_servers, controller_port)
            )
        # Owner-only: a secured broker's file holds the admin user's login.
        write_private(
            home / "server.properties", "".join(f"{k}={v}\n" for k, v in settings.items())
        )
        (home / LAYOUT_FILE).write_text(json.dumps(asdict(layout), indent=2))
        return layout

    def _read_layout(self, alias: str) -> Layout:
        path = self.directory / alias / LAYOUT_FILE
        try:
            return Layout(**json.loads(path.read_text()))
        except FileNotFoundError:
            raise DevClusterError(
                f"no stopped dev cluster named {alias!r} in {self.directory}"
            ) from None
        except (OSError, ValueError, TypeError) as exc:
            raise DevClusterError(f"cannot read {path}: {exc}") from exc

    def _wait_ready(self, cluster: DevCluster, deadline: float) -> None:
        from confluent_kafka.admin import AdminClient

        admin = None
        while True:
            popen = self._children.get(cluster.alias)
            if popen is not None and popen.poll() is not None:
                raise DevClusterError(
                    f"broker {cluster.alias} exited with code {popen.returncode} while "
                    f"starting; its output:\n{tail(Path(cluster.directory) / 'broker.out')}"
                )
            # Ask Kafka only once the port is open: librdkafka logs every refused connect.
            if admin is None and port_accepts(cluster.port):
                admin = AdminClient(dict(self.client_config(cluster)))
            if admin is not None:
                try:
                    metadata = admin.list_topics(timeout=2)
                    if metadata.brokers and metadata.controller_id >= 0:
                        return
                except Exception:  # noqa: BLE001 - not ready yet; the deadline decides
                    pass
            if time.monotonic() > deadline:
                raise DevClusterError(
                    f"broker {cluster.alias} did not accept requests on "
                    f"{cluster.bootstrap_servers} in time; see {cluster.directory}/logs/server.log"
                )
            time.sleep(0.2)

    # -- stopping --------------------------------------------------------------------

    def down(self, *, progress: Progress | None = None, timeout: float = 30.0) -> list[DevCluster]:
        """Stop every cluster in this directory and wait until its port is free."""
        say = progress or (lambda _msg: None)
        stopped = []
        for cluster in self.clusters():
            say(f"stopping {cluster.alias} (pid {cluster.pid})")
            self._stop(cluster, timeout=timeout)
            stopped.append(cluster)
        if (self.directory / STATE_FILE).exists():
            (self.directory / STATE_FILE).unlink()
        return stopped

    def stop(self, alias: str, *, timeout: float = 30.0) -> None:
        """Stop one cluster (for outage tests); the others keep running.

        Its directory stays, so `start(alias)` brings it back with its data.
        """
        cluster = self.get(alias)
        self._stop(cluster, timeout=timeout)
        self._save([c for c in self.clusters() if c.alias != alias])

    def start(
        self, alias: str, *, die_with_parent: bool = False, timeout: float = 120.0
    ) -> DevCluster:
        """Start a stopped cluster again: same ports, cluster id and data (the end of an outage).

        Fails if the cluster is running, was never laid out here, or another
        process took one of its ports in the meantime.
        """
        if any(c.alias == alias for c in self.clusters()):
            raise DevClusterError(f"dev cluster {alias!r} is already running in {self.directory}")
        layout = self._read_layout(alias)
        for port in (layout.port, layout.controller_port):
            if port_accepts(port):
                raise DevClusterError(
                    f"cannot start {alias} again: port {port} is taken by another process"
                )
        popen = launch(jvm.java_executable(), jvm.classpath("kafka"), layout, die_with_parent)
        self._children[alias] = popen
        cluster = _started(layout, popen.pid)
        self._save(self.clusters() + [cluster])
        try:
            self._wait_ready(cluster, deadline=time.monotonic() + timeout)
        except BaseException:
            self._stop(cluster)
            self._save([c for c in self.clusters() if c.alias != alias])
            raise
        return cluster

    def _stop(self, cluster: DevCluster, timeout: float = 30.0) -> None:
        popen = self._children.pop(cluster.alias, None)
        if popen is not None:
            terminate_child(popen, timeout)
        elif _is_our_broker(cluster):
            terminate_pid(cluster.pid, timeout)
        _wait_port_closed(cluster.port, time.monotonic() + timeout)
        _wait_port_closed(cluster.controller_port, time.monotonic() + timeout)

    # -- files -----------------------------------------------------------------------

    def _save(self, clusters: list[DevCluster]) -> None:
        path = self.directory / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps([asdict(c) for c in clusters], indent=2))
        tmp.replace(path)

    def _write_properties(self) -> None:
        clusters = self.clusters()
        lines = [
            "# Local Mirrorline dev clusters (MirrorMaker 2 properties format).",
            f"clusters = {', '.join(c.alias for c in clusters)}",
        ]
        for cluster in clusters:
            lines.append(f"{cluster.alias}.bootstrap.servers = {cluster.bootstrap_servers}")
            if cluster.security != "plaintext":
                lines += self.security.mm2_properties(cluster.alias)
        lines += [
            "# Single-node clusters: every topic Mirrorline creates has one replica.",
            "replication.factor = 1",
            "checkpoints.topic.replication.factor = 1",
            "heartbeats.topic.replication.factor = 1",
            "offset-syncs.topic.replication.factor = 1",
        ]
        self.properties_file.write_text("\n".join(lines) + "\n")


def _checked_aliases(aliases: Iterable[str]) -> list[str]:
    wanted = [a.strip() for a in aliases if a.strip()]
    if not wanted:
        raise DevClusterError("no cluster aliases given")
    for alias in wanted:
        if not all(ch.isalnum() or ch in "-_" for ch in alias):
            raise DevClusterError(
                f"cluster alias {alias!r} may contain only letters, digits, '-' and '_'"
            )
    if len(set(wanted)) != len(wanted):
        raise DevClusterError(f"duplicate cluster alias in {', '.join(wanted)}")
    return wanted


def _run_all(commands: list[list[str]], timeout: float) -> None:
    """Run the commands at once; their arguments may hold passwords and are never shown."""
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for cmd in commands
    ]
    failures = []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        if proc.returncode != 0:
            failures.append(out.decode(errors="replace").strip())
    if failures:
        raise DevClusterError("formatting Kafka storage failed:\n" + "\n".join(failures))


def _is_our_broker(cluster: DevCluster) -> bool:
    """True when pid is alive and is the broker of this cluster (not a reused pid)."""
    if not pid_alive(cluster.pid):
        return False
    try:
        cmdline = Path(f"/proc/{cluster.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"-Dmirrorline.dev.cluster={cluster.directory}".encode() in cmdline


def _wait_port_closed(port: int, deadline: float) -> None:
    while port_accepts(port):
        if time.monotonic() > deadline:
            raise DevClusterError(f"port {port} still accepts connections after the broker stopped")
        time.sleep(0.1)


def _started(layout: Layout, pid: int) -> DevCluster:
    return DevCluster(pid=pid, **asdict(layout))
