"""The files that describe the dev clusters running in one directory.

``clusters.json`` is the record of what runs, one entry per running cluster:
alias, cluster id, directory, security and its nodes (id, ports, directory, pid;
no pid for a node stopped on purpose), its WAN link if it has one (latency,
jitter, bandwidth, the proxy server's pid and API port; see `devlink`), plus the
bootstrap servers for other readers (the proxy's addresses behind a link).
The file is replaced atomically, so a reader never sees half of it.
``clusters.properties`` names the clusters in MirrorMaker 2's format; topics that
Mirrorline creates get as many replicas as the smallest cluster allows (at most 3).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from mirrorline.devlink import LinkState
from mirrorline.devnode import DevNode
from mirrorline.devsecurity import DevSecurity

__all__ = [
    "ClusterHealth",
    "DevCluster",
    "DevClusterError",
    "NodeHealth",
    "checked_aliases",
    "properties_text",
    "read_state",
    "write_state",
]


class DevClusterError(RuntimeError):
    """A dev cluster could not be started, found or stopped; the message says why."""


@dataclass(frozen=True)
class DevCluster:
    alias: str
    cluster_id: str
    directory: str
    nodes: tuple[DevNode, ...]
    security: str = "plaintext"
    link: LinkState | None = None  # clients reach the nodes through this simulated WAN link

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.address for node in self.nodes)

    def node(self, node_id: int) -> DevNode:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise DevClusterError(
            f"dev cluster {self.alias!r} has nodes 1 to {len(self.nodes)}; "
            f"there is no node {node_id}"
        )

    def with_node(self, changed: DevNode) -> DevCluster:
        return replace(self, nodes=tuple(changed if n.id == changed.id else n for n in self.nodes))

    def to_dict(self) -> dict[str, object]:
        return {
            "alias": self.alias,
            "bootstrap_servers": self.bootstrap_servers,
            "cluster_id": self.cluster_id,
            "directory": self.directory,
            "security": self.security,
            "nodes": [node.__dict__ for node in self.nodes],
            "link": None if self.link is None else self.link.to_dict(),
        }

    @classmethod
    def from_dict(cls, entry: dict[str, object]) -> DevCluster:
        nodes, link = entry["nodes"], entry.get("link")
        if not isinstance(nodes, list):
            raise TypeError("nodes is not a list")
        if link is not None and not isinstance(link, dict):
            raise TypeError("link is not an object")
        return cls(
            alias=str(entry["alias"]),
            cluster_id=str(entry["cluster_id"]),
            directory=str(entry["directory"]),
            security=str(entry.get("security", "plaintext")),
            nodes=tuple(DevNode(**node) for node in nodes),
            link=None if link is None else LinkState.from_dict(link),
        )


@dataclass(frozen=True)
class NodeHealth:
    node: DevNode
    process_alive: bool
    reachable: bool

    @property
    def state(self) -> str:
        if self.node.pid is None:
            return "stopped"
        if self.process_alive:
            return "up" if self.reachable else "starting or unreachable"
        return "dead"


@dataclass(frozen=True)
class ClusterHealth:
    cluster: DevCluster
    nodes: tuple[NodeHealth, ...]
    link_alive: bool | None = None  # None: the cluster has no link

    @property
    def up(self) -> bool:
        nodes_up = all(n.process_alive and n.reachable for n in self.nodes)
        return nodes_up and self.link_alive is not False


def read_state(path: Path) -> list[DevCluster]:
    if not path.exists():
        return []
    try:
        return [DevCluster.from_dict(entry) for entry in json.loads(path.read_text())]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DevClusterError(f"cannot read {path}: {exc}") from exc


def write_state(path: Path, clusters: list[DevCluster]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([c.to_dict() for c in clusters], indent=2))
    tmp.replace(path)


def checked_aliases(aliases: Iterable[str]) -> list[str]:
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


def properties_text(clusters: list[DevCluster], security: DevSecurity) -> str:
    """``clusters.properties``: the clusters in MirrorMaker 2's format, ready for Mirrorline."""
    smallest = min((len(c.nodes) for c in clusters), default=1)
    factor = min(3, smallest)
    lines = [
        "# Local Mirrorline dev clusters (MirrorMaker 2 properties format).",
        f"clusters = {', '.join(c.alias for c in clusters)}",
    ]
    for cluster in clusters:
        lines.append(f"{cluster.alias}.bootstrap.servers = {cluster.bootstrap_servers}")
        if cluster.security != "plaintext":
            lines += security.mm2_properties(cluster.alias, cluster.security)
    lines += [
        f"# The smallest cluster has {smallest} node(s): every topic Mirrorline creates "
        f"has {factor} replica(s).",
        f"replication.factor = {factor}",
        f"checkpoints.topic.replication.factor = {factor}",
        f"heartbeats.topic.replication.factor = {factor}",
        f"offset-syncs.topic.replication.factor = {factor}",
    ]
    return "\n".join(lines) + "\n"
