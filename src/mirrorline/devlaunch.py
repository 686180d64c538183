"""Starting, awaiting and stopping the processes of dev clusters: nodes and their links.

`DevClusters` (in `devcluster`) decides what to start and stop and keeps the
state files; `Processes` does it. A cluster starts link first (its proxy server,
see `devlink`), then its nodes, and stops in the reverse order; a node counts as
started only once it is a registered broker, asked through the same client
addresses users get (through the link, if there is one), so a cluster that
`up` returns is usable from its clients' side.

`Processes` remembers the JVMs it started as children, by (alias, node id), so it
can reap them (no zombies) and read their exit codes while waiting.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from mirrorline import devhealth, jvm
from mirrorline.devbroker import Layout, launch
from mirrorline.devlatency import LinkError, Progress
from mirrorline.devlink import start_link, stop_link
from mirrorline.devnode import (
    DevNode,
    NodeError,
    check_ports_free,
    is_running,
    nodes_of,
    startup_failure,
    stop_processes,
)
from mirrorline.devstate import DevCluster, DevClusterError
from mirrorline.process import port_accepts

__all__ = ["PortTaken", "Processes"]

ClientConfig = Callable[[DevCluster], dict[str, str]]

# What a node's JVM prints when a port it was given is taken (`java.net.BindException`).
_BIND_FAILED = "Address already in use"


class PortTaken(DevClusterError):
    """A node could not bind a port it was given: another process took it meanwhile."""

    def __init__(self, message: str, summary: str) -> None:
        super().__init__(message)
        self.summary = summary


class Processes:
    """The processes of dev clusters, and the node JVMs this object started."""

    def __init__(self) -> None:
        self._children: dict[tuple[str, int], subprocess.Popen[bytes]] = {}

    def launch_cluster(
        self, layout: Layout, die_with_parent: bool, progress: Progress | None = None
    ) -> DevCluster:
        """Start the cluster's link (if it has one), then its nodes; do not wait for them."""
        link = None
        if layout.link is not None:
            try:
                link = start_link(layout, die_with_parent=die_with_parent, progress=progress)
            except LinkError as exc:
                raise DevClusterError(str(exc)) from None
        cluster = DevCluster(
            layout.alias, layout.cluster_id, layout.directory, (), layout.security, link
        )
        try:
            for node in nodes_of(layout):
                pid = self.launch_node(layout, node.id, die_with_parent)
                cluster = replace(cluster, nodes=(*cluster.nodes, node.started(pid)))
        except BaseException:
            self.stop_nodes((cluster, n) for n in cluster.nodes)
            self.stop_links([cluster])
            raise
        return cluster

    def launch_node(self, layout: Layout, node_id: int, die_with_parent: bool) -> int:
        """Start one node's JVM; its pid."""
        java, classpath = jvm.java_executable(), jvm.classpath("kafka")
        popen = launch(java, classpath, layout, node_id, die_with_parent)
        self._children[(layout.alias, node_id)] = popen
        return popen.pid

    def wait_registered(
        self, cluster: DevCluster, ids: list[int], deadline: float, client_config: ClientConfig
    ) -> None:
        """Wait until nodes `ids` accept connections and are registered brokers.

        The running nodes are asked, if there are any: a starting node accepts
        connections before it serves requests, which would then wait for it.
        """
        others = tuple(n for n in cluster.nodes if n.id not in ids and n.pid is not None)
        config = client_config(replace(cluster, nodes=others) if others else cluster)
        missing = list(ids)
        while True:
            for node_id in ids:
                node = cluster.node(node_id)
                popen = self._children.get((cluster.alias, node_id))
                code = popen.poll() if popen is not None else None
                if code is not None or (popen is None and not is_running(node)):
                    how = f"exited with code {code}" if code is not None else "is not running"
                    failure = str(startup_failure(cluster.alias, node, how))
                    if _BIND_FAILED in _text(node.output) + _text(node.server_log):
                        summary = f"a port of node {node_id} of {cluster.alias} was taken"
                        raise PortTaken(failure, summary)
                    raise DevClusterError(failure)
            # Ask Kafka only once the ports are open: librdkafka logs every refused connect.
            # Another process may listen on a node's port (see `PortTaken`): only an
            # answer from this cluster counts.
            if all(port_accepts(cluster.node(i).port) for i in ids):
                registered = devhealth.registered_brokers(config, cluster_id=cluster.cluster_id)
                missing = [i for i in ids if i not in registered]
                if not missing:
                    return
            if time.monotonic() > deadline:
                node = cluster.node(missing[0] if missing else ids[0])
                raise DevClusterError(
                    str(startup_failure(cluster.alias, node, "did not register in time"))
                )
            time.sleep(0.2)

    @staticmethod
    def ports_free(alias: str, nodes: Iterable[DevNode]) -> None:
        try:
            check_ports_free(nodes)
        except NodeError as exc:
            raise DevClusterError(f"cannot start {alias} again: {exc}") from None

    def stop_nodes(
        self, nodes: Iterable[tuple[DevCluster, DevNode]], timeout: float = 30.0
    ) -> None:
        """Stop the given nodes together (see `devnode.stop_processes`)."""
        targets = []
        for cluster, node in nodes:
            popen = self._children.pop((cluster.alias, node.id), None)
            if popen is not None and popen.pid != node.pid:
                popen.poll()  # reaped; the node was started again by someone else
                popen = None
            targets.append((node, popen))
        try:
            stop_processes(targets, timeout)
        except NodeError as exc:
            raise DevClusterError(str(exc)) from None

    @staticmethod
    def stop_links(clusters: Iterable[DevCluster]) -> None:
        """Stop the links of `clusters` (after their nodes: clients see them go first)."""
        for cluster in clusters:
            if cluster.link is not None:
                stop_link(cluster.link)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
