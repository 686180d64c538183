"""One dev cluster's nodes: their directory layout, settings and command lines.

A dev cluster is N KRaft nodes on loopback (one by default), each a JVM running
broker and controller (``process.roles=broker,controller``) with node id 1..N,
its own client and controller port and its own directory ``<alias>/node-<id>/``
(``server.properties``, ``data/``, ``logs/server.log``, ``broker.out``). All N
nodes are voters of the metadata quorum (``controller.quorum.voters``), so any
node may be the active controller and a majority must be up.

Replication follows the size, the way production clusters are set up:

- one node: every topic, internal ones included, has one replica (transactions,
  consumer groups and compaction work on one node);
- two nodes: two replicas, one of them enough to write (``min.insync.replicas=1``);
- three or more: three replicas and ``min.insync.replicas=2``, so one node may be
  down while producers with ``acks=all`` keep writing.

A cluster may sit behind a simulated WAN link (`devlink`): each node then also
has an INTERNAL listener for the brokers and advertises a proxy's port to
clients (`listener_settings`).

Retention and compaction act within seconds, so that tests can watch them.

The nodes' JVMs run as Kafka's scripts run them (a fixed 1 GiB heap, G1, both JIT
compilers) unless ``MIRRORLINE_DEV_BROKER_JVM=light``: a heap that grows from 256
MiB, the serial collector and the client JIT compiler only, which halves the CPU a
node needs to start (six nodes booting on two cores: about 10 s instead of 17) at
the cost of peak throughput. Test suites that start and restart many nodes use it;
benchmarks do not.
`DevClusters` (in `devcluster`) starts, finds and stops clusters; this module only
says what to run and with which files.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from mirrorline.certificates import write_private
from mirrorline.devlatency import Link
from mirrorline.devsecurity import DevSecurity
from mirrorline.process import dying_with_parent

BROKER_MAIN = "kafka.Kafka"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
HOST = "127.0.0.1"
LAYOUT_FILE = "layout.json"  # in each cluster's directory: how to start it again

__all__ = [
    "Layout",
    "NodePorts",
    "format_command",
    "launch",
    "listener_settings",
    "new_cluster_id",
    "plan_layout",
    "read_layout",
    "replication_settings",
    "run_all",
    "server_properties",
    "write_files",
]


@dataclass(frozen=True)
class NodePorts:
    """One node's id and ports: client and controller, and behind a WAN link also the
    brokers' own listener and the proxy port clients are told to use."""

    id: int
    port: int
    controller_port: int
    internal_port: int | None = None  # behind a link: brokers among themselves
    proxy_port: int | None = None  # behind a link: advertised to clients

    @property
    def address(self) -> str:
        """The address clients connect to: the proxy's behind a link, else the broker's."""
        return f"{HOST}:{self.proxy_port or self.port}"


@dataclass(frozen=True)
class Layout:
    """A cluster's directory and its nodes' ports before any process exists."""

    alias: str
    cluster_id: str
    directory: str
    nodes: tuple[NodePorts, ...]
    security: str = "plaintext"
    link: Link | None = None  # clients reach the nodes through this simulated WAN link
    link_api_port: int | None = None  # the link's proxy server

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.address for node in self.nodes)

    def node_directory(self, node_id: int) -> Path:
        return Path(self.directory) / f"node-{node_id}"

    def node(self, node_id: int) -> NodePorts:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Layout:
        fields: dict[str, Any] = json.loads(text)
        nodes = tuple(NodePorts(**node) for node in fields.pop("nodes"))
        link = fields.pop("link", None)
        return cls(nodes=nodes, link=Link(**link) if link else None, **fields)


def plan_layout(
    alias: str,
    directory: str,
    brokers: int,
    security: str,
    link: Link | None,
    take_port: Callable[[], int],
) -> Layout:
    """A new cluster's layout with ports from `take_port`: client and controller per node,
    and behind a link also the internal and proxy port per node and the link's API port."""
    nodes = tuple(
        NodePorts(
            k + 1,
            take_port(),
            take_port(),
            internal_port=take_port() if link else None,
            proxy_port=take_port() if link else None,
        )
        for k in range(brokers)
    )
    api_port = take_port() if link else None
    return Layout(alias, new_cluster_id(), directory, nodes, security, link, api_port)


def replication_settings(brokers: int) -> dict[str, str]:
    """Replication factors and minimum ISRs of a cluster of `brokers` nodes (see the module)."""
    factor = str(min(brokers, 3))
    min_isr = "2" if brokers >= 3 else "1"
    return {
        "offsets.topic.replication.factor": factor,
        "transaction.state.log.replication.factor": factor,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": factor,
        "share.coordinator.state.topic.min.isr": min_isr,
        "default.replication.factor": factor,
        "min.insync.replicas": min_isr,
    }


def _liveness_settings(nodes: int) -> dict[str, str]:
    """With several nodes, a node that stops heartbeating is fenced after 4 s instead of 9 s.

    A node stopped while it was the active controller leaves its registration to
    expire by this timeout, and starting it again waits for that; killed nodes are
    noticed as soon, so outage tests see failover within seconds.
    """
    if nodes == 1:
        return {}
    return {"broker.heartbeat.interval.ms": "1000", "broker.session.timeout.ms": "4000"}


def listener_settings(node: NodePorts) -> dict[str, str]:
    """A plaintext node's listeners: clients, brokers among themselves, controller.

    Without a link, clients and brokers share the PLAINTEXT listener. Behind a
    WAN link the PLAINTEXT listener advertises the proxy's port, so every client
    connection crosses the link, and the brokers replicate over their own
    INTERNAL listener, advertised as is, as in one data centre.
    """
    client = f"{HOST}:{node.port}"
    controller = f"CONTROLLER://{HOST}:{node.controller_port}"
    if node.internal_port is None or node.proxy_port is None:
        return {
            "listeners": f"PLAINTEXT://{client},{controller}",
            "advertised.listeners": f"PLAINTEXT://{client}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
        }
    internal = f"INTERNAL://{HOST}:{node.internal_port}"
    return {
        "listeners": f"PLAINTEXT://{client},{internal},{controller}",
        "advertised.listeners": f"PLAINTEXT://{node.address},{internal}",
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
        ),
        "inter.broker.listener.name": "INTERNAL",
    }


def server_properties(layout: Layout, node_id: int) -> dict[str, str]:
    node = layout.node(node_id)
    voters = ",".join(f"{n.id}@{HOST}:{n.controller_port}" for n in layout.nodes)
    settings = {
        "process.roles": "broker,controller",
        "node.id": str(node.id),
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        **listener_settings(node),
        "log.dirs": str(layout.node_directory(node_id) / "data"),
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.num.partitions": "10",
        "num.partitions": "1",
        **replication_settings(len(layout.nodes)),
        **_liveness_settings(len(layout.nodes)),
        # Mirrorline creates the topics it writes; auto-creation would hide mistakes.
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        # Make retention and compaction act within seconds, so tests can watch them.
        "log.initial.task.delay.ms": "1000",
        "log.retention.check.interval.ms": "1000",
        "log.cleaner.backoff.ms": "500",
        "log.segment.delete.delay.ms": "1000",
        "file.delete.delay.ms": "1000",
    }
    return settings


def write_files(layout: Layout, extra: Callable[[NodePorts], dict[str, str]]) -> None:
    """Write each node's ``server.properties`` (with `extra` settings) and ``layout.json``."""
    for node in layout.nodes:
        home = layout.node_directory(node.id)
        (home / "logs").mkdir(parents=True)
        settings = {**server_properties(layout, node.id), **extra(node)}
        # Owner-only: a secured node's file holds the admin user's login.
        write_private(
            home / "server.properties", "".join(f"{k}={v}\n" for k, v in settings.items())
        )
    (Path(layout.directory) / LAYOUT_FILE).write_text(layout.to_json())


def read_layout(directory: Path) -> Layout:
    """The layout `write_files` wrote in a cluster's directory."""
    return Layout.from_json((directory / LAYOUT_FILE).read_text())


def new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding.

    Ids starting with "-" are drawn again: command-line tools (the storage
    formatter among them) would read them as an option.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _log_config() -> Path:
    return Path(str(resources.files("mirrorline.resources") / "broker-log4j2.properties"))


JVM_ENV = "MIRRORLINE_DEV_BROKER_JVM"
_JVM_PROFILES = {
    # Kafka's kafka-server-start.sh and kafka-run-class.sh: a fixed 1 GiB heap and G1
    # with their pause goal and marking threshold.
    "standard": [
        "-Xms1g",
        "-Xmx1g",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:InitiatingHeapOccupancyPercent=35",
        "-XX:+ExplicitGCInvokesConcurrent",
    ],
    # A heap that grows from 256 MiB: many nodes on one machine.
    "light": ["-Xms256m", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"],
}


def jvm_profile() -> list[str]:
    """The nodes' heap, collector and compiler flags, as `JVM_ENV` chooses (see the module)."""
    name = os.environ.get(JVM_ENV) or "standard"
    if name not in _JVM_PROFILES:
        from mirrorline.devstate import DevClusterError  # devstate imports this module

        raise DevClusterError(f"{JVM_ENV}={name!r}: choose {' or '.join(_JVM_PROFILES)}")
    return _JVM_PROFILES[name]


def java_command(java: str, classpath: str, home: Path, main: str) -> list[str]:
    return [
        java,
        *jvm_profile(),
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={_log_config()}",
        f"-Dkafka.logs.dir={home / 'logs'}",
        # Lets `down` recognise its nodes even across process restarts.
        f"-Dmirrorline.dev.cluster={home}",
        "-cp",
        classpath,
        main,
    ]


def format_command(
    java: str, classpath: str, layout: Layout, node_id: int, security: DevSecurity
) -> list[str]:
    home = layout.node_directory(node_id)
    command = java_command(java, classpath, home, STORAGE_TOOL_MAIN) + [
        "format",
        "--cluster-id",
        layout.cluster_id,
        "--config",
        str(home / "server.properties"),
    ]
    return command + security.format_arguments(layout.security)


def launch(
    java: str, classpath: str, layout: Layout, node_id: int, die_with_parent: bool
) -> subprocess.Popen[bytes]:
    home = layout.node_directory(node_id)
    command = java_command(java, classpath, home, BROKER_MAIN)
    command.append(str(home / "server.properties"))
    if die_with_parent:
        # The kernel kills the node if this process dies, even by SIGKILL.
        command = dying_with_parent(command)
    # Appended to: a node started again keeps the output of its earlier run.
    out = open(home / "broker.out", "ab")  # noqa: SIM115 - child owns it
    try:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            # Own session: a terminal's Ctrl-C reaches Mirrorline, which stops nodes in order.
            start_new_session=True,
        )
    finally:
        out.close()


def run_all(commands: list[list[str]], timeout: float) -> list[str]:
    """Run the commands at once; the output of those that failed.

    Their arguments may hold passwords and are never shown."""
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
    return failures
