"""What a set of dev clusters is doing: node health, partition leaders, the controller.

`DevClusters` gets these from `ClusterQueries`; they only ask (the processes,
their ports, the clusters themselves) and change nothing but leadership, which
`settle` moves back to the preferred replicas after a node's outage.
"""

from __future__ import annotations

from collections.abc import Callable

from mirrorline import devhealth
from mirrorline.devlink import link_alive
from mirrorline.devnode import is_running
from mirrorline.devstate import ClusterHealth, DevCluster, DevClusterError, NodeHealth
from mirrorline.process import port_accepts

Progress = Callable[[str], None]


class ClusterQueries:
    """Questions about the clusters `clusters()` returns (see the module)."""

    def clusters(self) -> list[DevCluster]:
        raise NotImplementedError

    def get(self, alias: str) -> DevCluster:
        raise NotImplementedError

    def client_config(self, cluster: DevCluster | str) -> dict[str, str]:
        raise NotImplementedError

    def health(self) -> list[ClusterHealth]:
        return [
            ClusterHealth(
                c,
                tuple(NodeHealth(n, is_running(n), port_accepts(n.port)) for n in c.nodes),
                None if c.link is None else link_alive(c.link),
            )
            for c in self.clusters()
        ]

    def leader_of(self, alias: str, topic: str, partition: int) -> int:
        """The id of the node leading `topic` partition `partition` of cluster `alias`."""
        try:
            leader = devhealth.leader_of(self.client_config(alias), topic, partition)
        except LookupError as exc:
            raise DevClusterError(f"{alias}: {exc}") from None
        if leader < 0:
            raise DevClusterError(f"{alias}: {topic}[{partition}] has no leader right now")
        return leader

    def settle(self, alias: str, deadline: float, progress: Progress | None = None) -> list[str]:
        """After a node of `alias` came back: wait until no partition is under-replicated
        (by `deadline`, a `time.monotonic()` value), then move leadership back to the
        preferred replicas (`devhealth.elect_preferred_leaders`); the partitions moved."""
        config = self.client_config(alias)
        lagging = devhealth.wait_in_sync(config, deadline, progress or (lambda _msg: None))
        if lagging:
            raise DevClusterError(
                f"{alias}: {len(lagging)} partition(s) still under-replicated: "
                f"{', '.join(lagging[:10])}"
            )
        try:
            return devhealth.elect_preferred_leaders(config)
        except RuntimeError as exc:
            raise DevClusterError(f"{alias}: {exc}") from None

    def active_controller(self, alias: str) -> int:
        """The id of the node that is the active controller of cluster `alias`."""
        cluster = self.get(alias)
        running = [n for n in cluster.nodes if is_running(n)]
        leader = devhealth.active_controller(running)
        if leader is None:
            raise DevClusterError(f"{alias}: no node knows of an active controller right now")
        return leader
