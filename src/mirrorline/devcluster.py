"""Real Apache Kafka clusters on loopback, for trying Mirrorline and for tests.

Each cluster has its own directory, cluster id and N KRaft nodes (one by default;
`devbroker` says what each node runs and with which settings, `devnode` how its
process is found and stopped). A set of clusters shares a directory holding:

- ``clusters.json``: what is running (alias, bootstrap servers, and per node its
  id, ports, directory and pid, no pid for a node stopped on purpose), read by
  `status`, `down` and the node commands;
- ``clusters.properties``: a ready-to-use MM2-format file naming the clusters;
- ``<alias>/layout.json``: the cluster's id and ports, to start it again;
- ``<alias>/node-<id>/``: a node's ``server.properties``, data and logs
  (``broker.out``, ``logs/server.log``);
- ``security/``, for clusters started with ``security="sasl_ssl"`` or ``"mtls"``: their
  CA, users, broker keys and users' keystores (see `devsecurity`).

Starting waits until every node accepts connections and the cluster has all its
brokers registered. Outages: `stop(alias)` / `start(alias)` take a whole cluster
away and bring it back on the same ports and data; `stop(alias, node)`,
`start(alias, node)` and `restart(alias, node)` do the same to one node, as a
broker outage would (`restart` also waits until no partition is under-replicated).
`leader_of` and `active_controller` name the nodes worth killing next.

A cluster started with a `link` sits behind a simulated WAN link: every client
connection crosses a latency proxy that starts and stops with the cluster (see
`devlink`); `devlaunch` starts, awaits and stops the processes.

Clusters started with ``die_with_parent=True`` (tests, the demo) are killed by the
kernel if the Python process dies without cleaning up, so no JVM outlives it.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from pathlib import Path

from mirrorline import jvm
from mirrorline.devbroker import (
    Layout,
    format_command,
    plan_layout,
    read_layout,
    run_all,
    write_files,
)
from mirrorline.devlatency import Link
from mirrorline.devlaunch import PortTaken, Processes
from mirrorline.devnode import is_running, nodes_of
from mirrorline.devqueries import ClusterQueries, Progress
from mirrorline.devsecurity import ADMIN_USER, SECURITY_MODES, DevSecurity
from mirrorline.devstate import (
    ClusterHealth,
    DevCluster,
    DevClusterError,
    checked_aliases,
    properties_text,
    read_state,
    write_state,
)
from mirrorline.process import reserve_port

__all__ = ["DEFAULT_ALIASES", "ClusterHealth", "DevCluster", "DevClusterError", "DevClusters"]

STATE_FILE = "clusters.json"
PROPERTIES_FILE = "clusters.properties"
DEFAULT_ALIASES = ("east", "west")


# Ports are picked free, but a node binds them only once its JVM runs: another
# process can take one meanwhile (`PortTaken`), and the clusters start again on new ones.
START_ATTEMPTS = 3


class DevClusters(ClusterQueries):
    """The dev clusters living in one directory."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).resolve()
        self._procs = Processes()

    # -- reading state ---------------------------------------------------------------

    def clusters(self) -> list[DevCluster]:
        return read_state(self.directory / STATE_FILE)

    def get(self, alias: str) -> DevCluster:
        for cluster in self.clusters():
            if cluster.alias == alias:
                return cluster
        raise DevClusterError(f"no dev cluster named {alias!r} running in {self.directory}")

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
        return self.security.client_config(cluster.bootstrap_servers, cluster.security, user)

    def wait_serving(self, alias: str, timeout: float) -> None:
        """Wait until every running node of cluster `alias` is a registered broker.

        A node starved of CPU long enough misses its heartbeats and is fenced
        until it has caught up: whatever asks it meanwhile waits or fails.
        """
        cluster = self.get(alias)
        running = [n.id for n in cluster.nodes if n.pid is not None]
        self._procs.wait_registered(
            cluster, running, time.monotonic() + timeout, self.client_config
        )

    # -- starting --------------------------------------------------------------------

    def up(
        self,
        aliases: Iterable[str] = DEFAULT_ALIASES,
        *,
        brokers: int = 1,
        die_with_parent: bool = False,
        timeout: float = 120.0,
        progress: Progress | None = None,
        security: str = "plaintext",
        link: Link | None = None,
    ) -> list[DevCluster]:
        """Start one cluster of `brokers` nodes per alias (added to those running here).

        `security` is `plaintext`, `sasl_ssl` or `mtls` (see `devsecurity`). With a
        `link`, clients reach every node through a simulated WAN link (see `devlink`).
        """
        say = progress or (lambda _msg: None)
        wanted = checked_aliases(aliases)
        if brokers < 1:
            raise DevClusterError(f"a cluster needs at least one broker, not {brokers}")
        if security not in SECURITY_MODES:
            raise DevClusterError(
                f"unknown security {security!r}: choose one of {', '.join(SECURITY_MODES)}"
            )
        if link is not None and security != "plaintext":
            raise DevClusterError(
                f"a WAN link works with plaintext dev clusters only, not {security}: "
                "start them without a link, or with --security plaintext"
            )
        clash = sorted({c.alias for c in self.clusters()}.intersection(wanted))
        if clash:
            raise DevClusterError(
                f"dev cluster(s) {', '.join(clash)} already running in {self.directory}; "
                "run `mirrorline dev down` first or pick other names"
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        java = jvm.java_executable()
        classpath = jvm.classpath("kafka", progress)

        for attempt in range(1, START_ATTEMPTS + 1):
            started: list[DevCluster] = []
            try:
                if security != "plaintext":
                    say("making the certificate authority, broker certificates and users")
                    self.security.ensure()
                with ExitStack() as ports_held:
                    layouts = [
                        self._lay_out(
                            plan_layout(
                                alias,
                                str(self.directory / alias),
                                brokers,
                                security,
                                link,
                                lambda: reserve_port(ports_held),
                            )
                        )
                        for alias in wanted
                    ]
                say(f"formatting storage for {', '.join(wanted)}")
                failures = run_all(
                    [
                        format_command(java, classpath, lay, n.id, self.security)
                        for lay in layouts
                        for n in lay.nodes
                    ],
                    timeout,
                )
                if failures:
                    raise DevClusterError(
                        "formatting Kafka storage failed:\n" + "\n".join(failures)
                    )
                for lay in layouts:
                    behind = f" behind a link of {link.describe()}" if link else ""
                    say(f"starting {lay.alias} on {lay.bootstrap_servers}{behind}")
                    started.append(self._procs.launch_cluster(lay, die_with_parent, say))
                    self._save(self.clusters() + [started[-1]])
                deadline = time.monotonic() + timeout
                for cluster in started:
                    self._procs.wait_registered(
                        cluster, [n.id for n in cluster.nodes], deadline, self.client_config
                    )
                    say(f"{cluster.alias} ready at {cluster.bootstrap_servers}")
            except BaseException as exc:
                # Never leave a half-started set behind (including on Ctrl-C).
                self._procs.stop_nodes((c, n) for c in started for n in c.nodes)
                self._procs.stop_links(started)
                self._save([c for c in self.clusters() if c.alias not in wanted])
                if not isinstance(exc, PortTaken) or attempt == START_ATTEMPTS:
                    raise
                say(f"{exc.summary}; starting again on other ports")
            else:
                break
        self._write_properties()
        return started

    def _lay_out(self, layout: Layout) -> Layout:
        home = Path(layout.directory)
        if home.exists():
            shutil.rmtree(home)  # a stopped cluster's leftovers: start clean
        secured = layout.security != "plaintext"
        write_files(
            layout,
            lambda n: (
                self.security.server_properties(
                    layout.alias, n.address, n.controller_port, layout.security
                )
                if secured
                else {}
            ),
        )
        return layout

    def _read_layout(self, alias: str) -> Layout:
        try:
            return read_layout(self.directory / alias)
        except FileNotFoundError:
            raise DevClusterError(
                f"no stopped dev cluster named {alias!r} in {self.directory}"
            ) from None
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise DevClusterError(f"cannot read the layout of {alias}: {exc}") from exc

    # -- stopping --------------------------------------------------------------------

    def down(self, *, progress: Progress | None = None, timeout: float = 30.0) -> list[DevCluster]:
        """Stop every node of every cluster here, all at once, and wait until their ports
        are free (one by one, each cluster's last node would wait for its lost quorum)."""
        say = progress or (lambda _msg: None)
        clusters = self.clusters()
        for cluster in clusters:
            pids = ", ".join(str(n.pid) for n in cluster.nodes if n.pid is not None)
            say(f"stopping {cluster.alias} (pid {pids or 'none'})")
        self._procs.stop_nodes(((c, n) for c in clusters for n in c.nodes), timeout)
        self._procs.stop_links(clusters)
        if (self.directory / STATE_FILE).exists():
            (self.directory / STATE_FILE).unlink()
        return clusters

    def stop(self, alias: str, node: int | None = None, *, timeout: float = 30.0) -> None:
        """Stop cluster `alias` (and its link), or only its node `node` (the link stays);
        the others keep running.

        Directories stay, so `start` brings the cluster or node back with its data.
        """
        cluster = self.get(alias)
        if node is None:
            self._procs.stop_nodes(((cluster, n) for n in cluster.nodes), timeout)
            self._procs.stop_links([cluster])
            self._save([c for c in self.clusters() if c.alias != alias])
            return
        self.stop_nodes([(alias, node)], timeout=timeout)

    def stop_nodes(self, nodes: Sequence[tuple[str, int]], *, timeout: float = 30.0) -> None:
        """Stop node N of every (alias, N) at once (of different clusters: an operator's
        rolling restart of independent clusters); the clusters' other nodes keep running."""
        targets = []
        for alias, node in nodes:
            cluster = self.get(alias)
            target = cluster.node(node)
            if target.pid is None:
                raise DevClusterError(f"node {node} of {alias} is already stopped")
            targets.append((cluster, target))
        self._procs.stop_nodes(targets, timeout)
        for cluster, target in targets:
            self._replace(self.get(cluster.alias).with_node(target.stopped()))

    def start(
        self,
        alias: str,
        node: int | None = None,
        *,
        die_with_parent: bool = False,
        timeout: float = 120.0,
    ) -> DevCluster:
        """Start a stopped cluster, or a stopped node of a running one, again: same ports,
        cluster id and data (the end of an outage); wait until it is registered.

        Fails if it is running, was never laid out here, or another process took
        one of its ports in the meantime.
        """
        if node is not None:
            self.start_nodes([(alias, node)], die_with_parent=die_with_parent, timeout=timeout)
            return self.get(alias)
        if any(c.alias == alias for c in self.clusters()):
            raise DevClusterError(
                f"dev cluster {alias!r} is already running in {self.directory} "
                "(a stopped node of it starts with --broker N)"
            )
        layout = self._read_layout(alias)
        self._procs.ports_free(alias, nodes_of(layout))
        cluster = self._procs.launch_cluster(layout, die_with_parent)
        self._save(self.clusters() + [cluster])
        wanted = [n.id for n in cluster.nodes]
        try:
            self._procs.wait_registered(
                cluster, wanted, time.monotonic() + timeout, self.client_config
            )
        except BaseException:
            self._procs.stop_nodes((cluster, cluster.node(i)) for i in wanted)
            self._procs.stop_links([cluster])
            self._save([c for c in self.clusters() if c.alias != alias])
            raise
        return cluster

    def start_nodes(
        self,
        nodes: Sequence[tuple[str, int]],
        *,
        die_with_parent: bool = False,
        timeout: float = 120.0,
    ) -> None:
        """Start stopped node N of every (alias, N) again, all at once, and wait until each
        is registered; if one does not come up, those started here are stopped again."""
        started: list[tuple[str, int]] = []
        try:
            for alias, node in nodes:
                cluster = self.get(alias)
                target = cluster.node(node)
                if target.pid is not None and is_running(target):
                    raise DevClusterError(f"node {node} of {alias} is already running")
                self._procs.ports_free(alias, [target])
                pid = self._procs.launch_node(self._read_layout(alias), node, die_with_parent)
                self._replace(cluster.with_node(target.started(pid)))
                started.append((alias, node))
            deadline = time.monotonic() + timeout
            for alias, node in started:
                self._procs.wait_registered(self.get(alias), [node], deadline, self.client_config)
        except BaseException:
            for alias, node in started:
                cluster = self.get(alias)
                self._procs.stop_nodes([(cluster, cluster.node(node))])
                self._replace(cluster.with_node(cluster.node(node).stopped()))
            raise

    def restart(
        self,
        alias: str,
        node: int,
        *,
        die_with_parent: bool = False,
        timeout: float = 120.0,
        progress: Progress | None = None,
    ) -> DevCluster:
        """Stop node `node` of `alias`, start it again, wait until it is registered and no
        partition of the cluster is under-replicated (its replicas caught up), then move
        leadership back to the preferred replicas (`settle`)."""
        say = progress or (lambda _msg: None)
        deadline = time.monotonic() + timeout
        say(f"stopping node {node} of {alias}")
        self.stop(alias, node)
        say(f"starting node {node} of {alias}")
        cluster = self.start(alias, node, die_with_parent=die_with_parent, timeout=timeout)
        say(f"node {node} of {alias} registered; waiting for its replicas to catch up")
        try:
            moved = self.settle(alias, deadline, say)
        except DevClusterError as exc:
            raise DevClusterError(f"{exc} ({timeout:.0f} s after restarting node {node})") from None
        say(
            f"node {node} of {alias} is back; no under-replicated partitions; "
            f"leadership of {len(moved)} partition(s) moved back to their preferred replicas"
        )
        return cluster

    def _save(self, clusters: list[DevCluster]) -> None:
        write_state(self.directory / STATE_FILE, clusters)

    def _replace(self, cluster: DevCluster) -> None:
        self._save([cluster if c.alias == cluster.alias else c for c in self.clusters()])

    def _write_properties(self) -> None:
        self.properties_file.write_text(properties_text(self.clusters(), self.security))
