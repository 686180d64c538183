"""A dev cluster behind a simulated WAN link: its proxy server, found again from any process.

A cluster started with a link (`mirrorline dev up --latency-ms N`) gets its own
Toxiproxy server (see `devlatency`) with its API on a loopback port of the
cluster's layout, and one proxy per node, from the node's advertised client port
(``NodePorts.proxy_port``) to its real client port. The nodes advertise the
proxy's port (`devbroker.listener_settings`), so the bootstrap connection and
those to each broker all cross the link, while brokers replicate among
themselves over their own listener and the controller quorum is left alone.

Lifecycle: the server starts before the nodes (their registration is checked
through it) and stops after them when the whole cluster goes (`down`,
`stop ALIAS`); `start ALIAS` starts it again on the same ports. A single node
stopping or starting keeps the proxies, as a broker outage leaves the network
alone. ``clusters.json`` records the server's pid and API port (`LinkState`), so
that `dev down` from another process stops it; a recorded pid counts only while
its command line is that server's, on that port (not a reused pid).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mirrorline.devbroker import Layout
from mirrorline.devlatency import BINARY, Link, LinkError, LinkServer, Progress
from mirrorline.process import pid_alive, port_accepts

__all__ = ["LINK_LOG", "LinkState", "link_alive", "start_link", "stop_link"]

LINK_LOG = "link.log"  # in the cluster's directory: the proxy server's output


@dataclass(frozen=True)
class LinkState:
    """A running link as ``clusters.json`` records it: what it adds and where its server is."""

    latency_ms: int
    jitter_ms: int
    bandwidth_kib_s: int | None
    api_port: int
    pid: int

    @property
    def link(self) -> Link:
        return Link(self.latency_ms, self.jitter_ms, self.bandwidth_kib_s)

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, entry: dict[str, object]) -> LinkState:
        bandwidth = entry.get("bandwidth_kib_s")
        return cls(
            latency_ms=int(str(entry["latency_ms"])),
            jitter_ms=int(str(entry["jitter_ms"])),
            bandwidth_kib_s=None if bandwidth is None else int(str(bandwidth)),
            api_port=int(str(entry["api_port"])),
            pid=int(str(entry["pid"])),
        )


def start_link(
    layout: Layout, *, die_with_parent: bool = False, progress: Progress | None = None
) -> LinkState:
    """Start the proxy server of `layout`'s link and one proxy per node.

    Raises LinkError naming the cluster if a port is taken or the server cannot
    be built, started or configured; a server it started is stopped again.
    """
    link, api_port = layout.link, layout.link_api_port
    if link is None or api_port is None:
        raise LinkError(f"dev cluster {layout.alias!r} was not laid out behind a link")
    wanted = [api_port] + [n.proxy_port for n in layout.nodes if n.proxy_port is not None]
    taken = [str(p) for p in wanted if port_accepts(p)]
    if taken:
        raise LinkError(
            f"cannot start the WAN link of {layout.alias}: port(s) {', '.join(taken)} "
            "are taken by another process"
        )
    try:
        server = LinkServer.start(
            api_port,
            Path(layout.directory) / LINK_LOG,
            die_with_parent=die_with_parent,
            progress=progress,
        )
    except (LinkError, OSError) as exc:
        raise LinkError(f"the WAN link of {layout.alias} did not start: {exc}") from None
    try:
        for node in layout.nodes:
            assert node.proxy_port is not None
            server.forward(f"{layout.alias}-node-{node.id}", node.proxy_port, node.port, link)
    except BaseException:
        server.stop()
        raise
    return LinkState(link.latency_ms, link.jitter_ms, link.bandwidth_kib_s, api_port, server.pid)


def link_alive(state: LinkState) -> bool:
    """True when the recorded pid is alive and is this link's proxy server."""
    if not pid_alive(state.pid):
        return False
    try:
        cmdline = Path(f"/proc/{state.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(part.endswith(BINARY.encode()) for part in cmdline) and (
        str(state.api_port).encode() in cmdline
    )


def stop_link(state: LinkState, timeout: float = 10.0) -> None:
    """Stop the link's proxy server if it still runs (its proxies go with it)."""
    if link_alive(state):
        LinkServer(state.api_port, state.pid).stop(timeout)
