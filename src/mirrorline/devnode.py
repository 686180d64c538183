"""A running dev cluster's nodes: what `clusters.json` records of each, and their processes.

Each node of a dev cluster is one JVM (see `devbroker`). ``clusters.json`` keeps,
per node, its id, ports, directory and pid; a node taken away on purpose
(`mirrorline dev stop ALIAS --broker N`) keeps its entry with no pid, so that
`status` shows it stopped and `start` knows its ports.

A pid alone proves nothing after a reboot or pid reuse: a node counts as running
only if that process exists and its command line carries the node's directory
(``-Dmirrorline.dev.cluster=<node directory>``, set by `devbroker`). Stopping
sends SIGTERM (a controlled shutdown that moves leadership away first), then
waits until its ports are closed, so the same ports can be taken again at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from mirrorline.devbroker import HOST, Layout
from mirrorline.process import pid_alive, port_accepts, tail

__all__ = [
    "DevNode",
    "NodeError",
    "check_ports_free",
    "is_running",
    "nodes_of",
    "startup_failure",
    "stop_processes",
]


class NodeError(RuntimeError):
    """A node could not be started or stopped; the message says which and why."""


@dataclass(frozen=True)
class DevNode:
    id: int
    port: int
    controller_port: int
    directory: str
    pid: int | None = None  # None: stopped on purpose
    internal_port: int | None = None  # behind a WAN link: the brokers' own listener
    proxy_port: int | None = None  # behind a WAN link: what clients connect to

    @property
    def address(self) -> str:
        """The address clients use: the link's proxy port if the cluster is behind one."""
        return f"{HOST}:{self.proxy_port or self.port}"

    @property
    def own_ports(self) -> tuple[int, ...]:
        """The ports the node's JVM listens on (the proxy's belong to the link)."""
        ports = (self.port, self.controller_port, self.internal_port)
        return tuple(p for p in ports if p is not None)

    @property
    def server_log(self) -> Path:
        return Path(self.directory) / "logs" / "server.log"

    @property
    def output(self) -> Path:
        return Path(self.directory) / "broker.out"

    def started(self, pid: int) -> DevNode:
        return replace(self, pid=pid)

    def stopped(self) -> DevNode:
        return replace(self, pid=None)


def nodes_of(layout: Layout) -> tuple[DevNode, ...]:
    """The nodes of `layout`, none of them running yet."""
    return tuple(
        DevNode(
            n.id,
            n.port,
            n.controller_port,
            str(layout.node_directory(n.id)),
            internal_port=n.internal_port,
            proxy_port=n.proxy_port,
        )
        for n in layout.nodes
    )


def is_running(node: DevNode) -> bool:
    """True when the node's pid is alive and is this node's JVM (not a reused pid)."""
    if node.pid is None or not pid_alive(node.pid):
        return False
    try:
        cmdline = Path(f"/proc/{node.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"-Dmirrorline.dev.cluster={node.directory}".encode() in cmdline


def stop_processes(
    targets: Sequence[tuple[DevNode, subprocess.Popen[bytes] | None]], timeout: float = 30.0
) -> None:
    """Stop the nodes' JVMs (ours as children, or found by pid) and wait for their ports to close.

    All are asked at once: nodes stopped one after the other would lose the quorum
    before the last ones finish their controlled shutdown, which then waits in vain.
    A node still running at the deadline is killed. The ports of a node that was no
    longer running are not waited for: another process may hold them.
    """
    running: list[tuple[DevNode, int, subprocess.Popen[bytes] | None]] = []
    for node, popen in targets:
        if popen is not None and popen.poll() is None:
            popen.terminate()
            running.append((node, popen.pid, popen))
        elif popen is None and node.pid is not None and is_running(node):
            os.kill(node.pid, signal.SIGTERM)
            running.append((node, node.pid, None))
    deadline = time.monotonic() + timeout
    for _, pid, child in running:
        while (child.poll() is None) if child is not None else pid_alive(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + 10
            time.sleep(0.1)
    for node, _, _ in running:
        for port in node.own_ports:
            while port_accepts(port):
                if time.monotonic() > deadline:
                    raise NodeError(
                        f"port {port} of node {node.id} ({node.directory}) still accepts "
                        "connections after it stopped"
                    )
                time.sleep(0.1)


def check_ports_free(nodes: Iterable[DevNode]) -> None:
    """Raise NodeError naming the first port of `nodes` another process has taken."""
    for node in nodes:
        for port in node.own_ports:
            if port_accepts(port):
                raise NodeError(f"port {port} of node {node.id} is taken by another process")


def startup_failure(alias: str, node: DevNode, what: str) -> NodeError:
    """An error naming the node that did not come up, with the tail of its output and log."""
    return NodeError(
        f"node {node.id} of {alias} ({node.address}) {what}; the end of {node.output}:\n"
        f"{tail(node.output, 15)}\nand of {node.server_log}:\n{tail(node.server_log, 15)}"
    )
