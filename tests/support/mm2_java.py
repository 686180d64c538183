"""MirrorMaker 2's own answers about a cluster, for comparison with Mirrorline's.

Each function runs `java/Mm2Client.java` (a single-file program on the
`mirrormaker` jar set) once against a real cluster and returns its answer
parsed. A failure of the Java side fails the test with its stderr. Each call
starts a JVM: a few seconds, so ask for what the test compares, not more.

    java_translate_offsets("127.0.0.1:9092", "east", "billing")
        # {("east.orders", 0): 42, ...}  RemoteClusterUtils.translateOffsets
    java_format_topic("127.0.0.1:9092", "heartbeats", "heartbeat")
        # ["Heartbeat{sourceClusterAlias=east, ...}", ...]  MM2's formatter, every record

`properties` adds MM2 client properties, for example
`{"replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"}`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from mirrorline import jvm

PROGRAM = Path(__file__).parent / "java" / "Mm2Client.java"

RecordKind = Literal["offset-sync", "checkpoint", "heartbeat"]


def java_translate_offsets(
    bootstrap: str,
    source_alias: str,
    group: str,
    properties: Mapping[str, str] | None = None,
    jars: Sequence[Path] = (),
) -> dict[tuple[str, int], int]:
    """`RemoteClusterUtils.translateOffsets`: (topic, partition) -> offset on this cluster.

    MM2 waits for its whole timeout (60 s) when the checkpoints topic does not exist.
    `jars` go on the classpath too (a replication policy of the file's own).
    """
    offsets = {}
    for line in _run("translate-offsets", bootstrap, [source_alias, group], properties, jars):
        topic, partition, offset, _metadata = line.split("\t", 3)
        offsets[(topic, int(partition))] = int(offset)
    return offsets


def java_remote_names(
    source_alias: str, topics: Sequence[str], properties: Mapping[str, str], jars: Sequence[Path]
) -> list[str]:
    """The remote name of each topic under the policy MM2 builds from `properties`."""
    return _run("remote-names", "127.0.0.1:1", [source_alias, *topics], properties, jars)


def java_upstream_clusters(bootstrap: str, properties: Mapping[str, str] | None = None) -> set[str]:
    """`RemoteClusterUtils.upstreamClusters`."""
    return set(_run("upstream-clusters", bootstrap, [], properties))


def java_replication_hops(
    bootstrap: str, source_alias: str, properties: Mapping[str, str] | None = None
) -> int:
    """`RemoteClusterUtils.replicationHops` (-1: not upstream of this cluster)."""
    (line,) = _run("replication-hops", bootstrap, [source_alias], properties)
    return int(line)


def java_heartbeat_topics(bootstrap: str, properties: Mapping[str, str] | None = None) -> set[str]:
    """`RemoteClusterUtils.heartbeatTopics`."""
    return set(_run("heartbeat-topics", bootstrap, [], properties))


def java_checkpoint_topics(bootstrap: str, properties: Mapping[str, str] | None = None) -> set[str]:
    """`RemoteClusterUtils.checkpointTopics`."""
    return set(_run("checkpoint-topics", bootstrap, [], properties))


def java_remote_topics(
    bootstrap: str,
    source_alias: str | None = None,
    properties: Mapping[str, str] | None = None,
) -> set[str]:
    """`MirrorClient.remoteTopics()`, or `remoteTopics(source_alias)` when given."""
    args = [source_alias] if source_alias is not None else []
    return set(_run("remote-topics", bootstrap, args, properties))


def java_format_topic(bootstrap: str, topic: str, kind: RecordKind) -> list[str]:
    """MM2's formatter of `kind` run over every record of `topic`, one line per record.

    Fails if any record cannot be formatted: the records are not MM2's format.
    """
    return _run("format", bootstrap, [topic, kind], None)


def _run(
    command: str,
    bootstrap: str,
    args: list[str],
    properties: Mapping[str, str] | None,
    jars: Sequence[Path] = (),
) -> list[str]:
    extra = [f"--{key}={value}" for key, value in (properties or {}).items()]
    classpath = os.pathsep.join([jvm.classpath("mirrormaker"), *(str(j) for j in jars)])
    result = subprocess.run(
        [
            jvm.java_executable(),
            "-cp",
            classpath,
            str(PROGRAM),
            command,
            bootstrap,
            *args,
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, (
        f"MM2 {command} {' '.join(args)} on {bootstrap} failed (exit {result.returncode}):\n"
        f"{result.stderr.strip()}"
    )
    return result.stdout.splitlines()
