"""One dev cluster's broker: its directory layout, settings and command lines.

A dev cluster is a single KRaft node (broker and controller in one JVM) whose
internal topics have one replica, so that transactions, consumer groups and
compaction work on one node, and whose retention and compaction act within
seconds, so that tests can watch them. `DevClusters` (in `devcluster`) starts,
finds and stops them; this module only says what to run and with which files.
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from mirrorline.devsecurity import DevSecurity
from mirrorline.process import dying_with_parent

BROKER_MAIN = "kafka.Kafka"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"

__all__ = ["Layout", "format_command", "launch", "new_cluster_id", "server_properties"]


@dataclass(frozen=True)
class Layout:
    """A cluster's directory and ports before its process exists."""

    alias: str
    bootstrap_servers: str
    controller_port: int
    cluster_id: str
    directory: str
    security: str = "plaintext"

    @property
    def port(self) -> int:
        return int(self.bootstrap_servers.rsplit(":", 1)[1])


def server_properties(layout: Layout) -> dict[str, str]:
    home = Path(layout.directory)
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{layout.controller_port}",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://{layout.bootstrap_servers},"
        f"CONTROLLER://127.0.0.1:{layout.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{layout.bootstrap_servers}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(home / "data"),
        # One node: every internal topic must live with replication factor 1.
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "10",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
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


def java_command(java: str, classpath: str, layout: Layout, main: str) -> list[str]:
    return [
        java,
        "-Xms256m",
        "-Xmx1g",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={_log_config()}",
        f"-Dkafka.logs.dir={Path(layout.directory) / 'logs'}",
        # Lets `down` recognise its brokers even across process restarts.
        f"-Dmirrorline.dev.cluster={layout.directory}",
        "-cp",
        classpath,
        main,
    ]


def format_command(java: str, classpath: str, layout: Layout, security: DevSecurity) -> list[str]:
    config = str(Path(layout.directory) / "server.properties")
    command = java_command(java, classpath, layout, STORAGE_TOOL_MAIN) + [
        "format",
        "--cluster-id",
        layout.cluster_id,
        "--config",
        config,
    ]
    if layout.security != "plaintext":
        command += security.format_arguments()
    return command


def launch(
    java: str, classpath: str, layout: Layout, die_with_parent: bool
) -> subprocess.Popen[bytes]:
    command = java_command(java, classpath, layout, BROKER_MAIN)
    command.append(str(Path(layout.directory) / "server.properties"))
    if die_with_parent:
        # The kernel kills the broker if this process dies, even by SIGKILL.
        command = dying_with_parent(command)
    # Appended to: a cluster started again keeps the output of its earlier run.
    out = open(Path(layout.directory) / "broker.out", "ab")  # noqa: SIM115 - child owns it
    try:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            # Own session: a terminal's Ctrl-C reaches Mirrorline, which stops brokers in order.
            start_new_session=True,
        )
    finally:
        out.close()
