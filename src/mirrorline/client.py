"""What applications ask about a cluster that Mirrorline (or MirrorMaker 2) replicates into.

The counterpart of MM2's `MirrorClient` and `RemoteClusterUtils`, with the
same answers on the same cluster: it reads the internal topics that
Mirrorline writes in MM2's formats (heartbeats, checkpoints) and lists
topics. No driver needs to run; any application with access to the cluster
can call it.

    from mirrorline import client

    west = {"bootstrap.servers": "west-kafka:9092"}
    offsets = client.translate_offsets(west, "east", "billing")
    consumer.assign(client.as_topic_partitions(offsets))   # resume on west

    client.replication_hops(west, "east")    # 1: east replicates directly into west
    client.upstream_clusters(west)           # {"east", ...}

Operators' tools use the connection settings and replication policy of a
Mirrorline configuration file:

    west = client.MirrorClient.from_config("mm2.properties", "west")
    west.remote_topics("east")

Questions about topic names follow the replication policy (by default
`DefaultReplicationPolicy` with separator ".", as in MM2). Remote topics are
also read from Mirrorline's metadata topic (`control.remote_topics`), so
they are found under `IdentityReplicationPolicy` too, where names say
nothing about origins.

A cluster that does not answer raises `KafkaOperationError` naming it. A
missing checkpoints topic means no checkpoints yet: the answer is empty.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicPartition

from mirrorline.admin_client import AdminClient
from mirrorline.checkpoints import read_checkpoints
from mirrorline.client_errors import ClientErrors
from mirrorline.config import ClientSettings, MirrorConfig, load_config
from mirrorline.control.remote_topics import read_remote_topics
from mirrorline.kafka import ClientConfig, KafkaOperationError
from mirrorline.policy import DefaultReplicationPolicy, IdentityReplicationPolicy, ReplicationPolicy

__all__ = [
    "MirrorClient",
    "TranslatedOffset",
    "as_topic_partitions",
    "checkpoint_topics",
    "count_hops",
    "heartbeat_topics",
    "policy_of_cluster",
    "remote_topics",
    "replication_hops",
    "topic_sources",
    "translate_offsets",
    "upstream_clusters",
]

DEFAULT_TIMEOUT_S = 30.0

TopicPartitionKey = tuple[str, int]  # (topic on this cluster, partition)


@dataclass(frozen=True)
class TranslatedOffset:
    """Where a consumer group resumes on this cluster, from its latest checkpoint.

    `offset` is the group's position in the remote topic (what to commit or
    seek to); `metadata` is the group's commit metadata at the source;
    `upstream_offset` is the committed offset at the source it was
    translated from.
    """

    offset: int
    metadata: str = ""
    upstream_offset: int | None = None


class MirrorClient:
    """Questions about one cluster: the target of replication flows.

    `settings` are librdkafka client settings of the cluster
    (`bootstrap.servers`, security settings...); `consumer_settings`, when
    the consumer needs different ones, are used to read internal topics.
    `policy` names remote and internal topics (default: MM2's
    `DefaultReplicationPolicy` with separator "."). `cluster` is the
    cluster's alias, used in error messages. `timeout` bounds each request.
    """

    def __init__(
        self,
        settings: Mapping[str, object],
        *,
        policy: ReplicationPolicy | None = None,
        consumer_settings: Mapping[str, object] | None = None,
        cluster: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.policy = policy if policy is not None else DefaultReplicationPolicy()
        self.timeout = timeout
        self._settings: ClientConfig = dict(settings)
        self._consumer_settings = dict(consumer_settings or settings)
        servers = _shown_servers(settings)
        self.where = f"cluster {cluster} ({servers})" if cluster else f"the cluster at {servers}"
        self._admin: AdminClient | None = None
        self._errors = ClientErrors()

    @classmethod
    def from_config(
        cls,
        config: MirrorConfig | str | os.PathLike[str],
        cluster: str,
        *,
        policy: ReplicationPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> MirrorClient:
        """A client of cluster `cluster` of a Mirrorline configuration (file or loaded).

        Uses the cluster's connection settings from the file and the
        replication policy of the flows into it (unless `policy` is given).
        Raises `ConfigError` for a file with errors and `ValueError` for an
        alias the file does not define.
        """
        loaded = config if isinstance(config, MirrorConfig) else load_config(config)
        if cluster not in loaded.clusters:
            raise ValueError(
                f"cluster {cluster!r} is not defined in {loaded.file}; "
                f"its clusters are {', '.join(loaded.clusters)}"
            )
        settings = loaded.clusters[cluster]
        return cls(
            settings.client_settings("admin"),
            consumer_settings=settings.client_settings("consumer"),
            policy=policy if policy is not None else policy_of_cluster(loaded, cluster),
            cluster=cluster,
            timeout=timeout,
        )

    # -- what MM2's MirrorClient answers ---------------------------------------------

    def heartbeat_topics(self) -> set[str]:
        """The heartbeats topics on this cluster: its own and those replicated into it."""
        return {t for t in self._topics() if self.policy.is_heartbeats_topic(t)}

    def checkpoint_topics(self) -> set[str]:
        """The checkpoints topics on this cluster (one per source cluster)."""
        return {t for t in self._topics() if self.policy.is_checkpoints_topic(t)}

    def upstream_clusters(self) -> set[str]:
        """Every cluster that replicates into this one, directly or over several hops.

        Found from the heartbeats topics, as in MM2: `east.heartbeats` says
        east replicates here; `central.east.heartbeats` adds central.
        """
        return {s for t in self.heartbeat_topics() for s in topic_sources(self.policy, t)}

    def replication_hops(self, source_alias: str) -> int:
        """The fewest hops from cluster `source_alias` to this one; -1 if it is not upstream."""
        hops = [count_hops(self.policy, t, source_alias) for t in self.heartbeat_topics()]
        return min((h for h in hops if h != -1), default=-1)

    def remote_topics(self, source_alias: str | None = None) -> set[str]:
        """Topics on this cluster replicated from another (from `source_alias` only, if given).

        The names the policy recognises as remote (internal topics left out),
        plus the remote topics flows publish in Mirrorline's metadata topic.
        """
        topics = self._topics()
        found = {
            t
            for t in topics
            if not self.policy.is_internal_topic(t)
            and self.policy.topic_source(t) is not None
            and source_alias in (None, self.policy.topic_source(t))
        }
        published = self._published_remote_topics()
        for flow, pairs in published.items():
            # A flow's name is "<source>-><target>"; aliases cannot contain ">".
            if source_alias in (None, flow.partition("->")[0]):
                found.update(remote for remote in pairs.values() if remote in topics)
        return found

    def translate_offsets(
        self, source_alias: str, group: str, *, timeout: float | None = None
    ) -> dict[TopicPartitionKey, TranslatedOffset]:
        """Consumer group `group`'s offsets on this cluster, translated from cluster `source_alias`.

        Read from the latest checkpoints in `<source_alias>.checkpoints.internal`
        (MM2's `RemoteClusterUtils.translateOffsets`); keys are the topics
        as named on this cluster. Empty when there are no checkpoints for the
        group (or none at all yet). See `as_topic_partitions` to commit or
        assign them.
        """
        topic = self.policy.checkpoints_topic(source_alias)
        try:
            checkpoints = read_checkpoints(
                self._consumer_settings,
                topic,
                group=group,
                missing_ok=True,
                timeout=timeout or self.timeout,
            )
        except KafkaOperationError as exc:
            raise KafkaOperationError(f"{self.where}: {exc}") from None
        return {
            (c.topic, c.partition): TranslatedOffset(
                c.downstream_offset, c.metadata, c.upstream_offset
            )
            for c in sorted(checkpoints.values(), key=lambda c: (c.topic, c.partition))
            if c.downstream_offset >= 0  # no offset (MM2 writes none): never one to commit
        }

    # -- helpers ---------------------------------------------------------------------

    def _topics(self) -> set[str]:
        """Every topic of the cluster except Kafka's own (`__consumer_offsets`...)."""
        if self._admin is None:
            config: ClientConfig = {
                # Failures are raised with librdkafka's reason (kept by
                # `error_cb`); its log would repeat them every second.
                "log_level": 0,
                **self._settings,
                "error_cb": self._errors,
            }
            self._admin = AdminClient(config)
        try:
            metadata = self._admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            self._admin.poll(0)  # serves `error_cb`
            reason = self._errors.text() or exc.args[0].str()
            raise KafkaOperationError(f"{self.where} does not answer: {reason}") from None
        self._errors.clear()
        return {
            name
            for name, topic in metadata.topics.items()
            if topic.error is None and not name.startswith("__")
        }

    def _published_remote_topics(self) -> dict[str, dict[str, str]]:
        try:
            return read_remote_topics(self._consumer_settings, timeout=self.timeout)
        except KafkaOperationError as exc:
            raise KafkaOperationError(f"{self.where}: {exc}") from None


# -- RemoteClusterUtils-style functions: one call, one answer -----------------------------


def translate_offsets(
    target_config: Mapping[str, object],
    source_alias: str,
    group: str,
    *,
    policy: ReplicationPolicy | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> dict[TopicPartitionKey, TranslatedOffset]:
    """Group `group`'s offsets on the target cluster, translated from cluster `source_alias`.

    `target_config`: librdkafka settings of the cluster the group moves to.
    See `MirrorClient.translate_offsets`.
    """
    return MirrorClient(target_config, policy=policy, timeout=timeout).translate_offsets(
        source_alias, group
    )


def upstream_clusters(
    target_config: Mapping[str, object], *, policy: ReplicationPolicy | None = None
) -> set[str]:
    """Every cluster replicating into the target, directly or not (from its heartbeats)."""
    return MirrorClient(target_config, policy=policy).upstream_clusters()


def replication_hops(
    target_config: Mapping[str, object],
    source_alias: str,
    *,
    policy: ReplicationPolicy | None = None,
) -> int:
    """The fewest hops from `source_alias` to the target cluster; -1 if unknown."""
    return MirrorClient(target_config, policy=policy).replication_hops(source_alias)


def remote_topics(
    target_config: Mapping[str, object],
    source_alias: str | None = None,
    *,
    policy: ReplicationPolicy | None = None,
) -> set[str]:
    """Topics on the target replicated from another cluster (`source_alias` only, if given)."""
    return MirrorClient(target_config, policy=policy).remote_topics(source_alias)


def heartbeat_topics(
    target_config: Mapping[str, object], *, policy: ReplicationPolicy | None = None
) -> set[str]:
    """The heartbeats topics on the target cluster."""
    return MirrorClient(target_config, policy=policy).heartbeat_topics()


def checkpoint_topics(
    target_config: Mapping[str, object], *, policy: ReplicationPolicy | None = None
) -> set[str]:
    """The checkpoints topics on the target cluster."""
    return MirrorClient(target_config, policy=policy).checkpoint_topics()


def as_topic_partitions(
    offsets: Mapping[TopicPartitionKey, TranslatedOffset],
) -> list[TopicPartition]:
    """Translated offsets as confluent-kafka `TopicPartition`s, for `Consumer.commit`
    (`consumer.commit(offsets=..., asynchronous=False)`) or `Consumer.assign`."""
    return [
        TopicPartition(topic, partition, t.offset, t.metadata)
        for (topic, partition), t in sorted(offsets.items())
    ]


def _shown_servers(settings: Mapping[str, object]) -> str:
    """The bootstrap servers for messages; hidden when a secret provider gave them."""
    if isinstance(settings, ClientSettings) and "bootstrap.servers" in settings:
        return settings.setting("bootstrap.servers").shown
    return str(settings.get("bootstrap.servers", "no bootstrap.servers"))


# -- reading topic names ------------------------------------------------------------------


def topic_sources(policy: ReplicationPolicy, topic: str) -> list[str]:
    """The clusters `topic` passed through, nearest first (`central.east.t`: central, east)."""
    sources: list[str] = []
    source = policy.topic_source(topic)
    # The membership test stops policies whose names cannot show a loop (identity).
    while source is not None and source not in sources:
        sources.append(source)
        upstream = policy.upstream_topic(topic)
        if upstream is None:
            break
        topic = upstream
        source = policy.topic_source(topic)
    return sources


def count_hops(policy: ReplicationPolicy, topic: str, source_alias: str) -> int:
    """How many hops `topic`'s name shows from `source_alias` to here; -1 if it does not."""
    sources = topic_sources(policy, topic)
    return sources.index(source_alias) + 1 if source_alias in sources else -1


def policy_of_cluster(config: MirrorConfig, cluster: str) -> ReplicationPolicy:
    """The replication policy naming topics on `cluster`: that of the flows into it.

    Enabled flows count first. Under `IdentityReplicationPolicy` (and
    `topic.rename.format`) a flow's policy knows its source; the cluster's does
    not, as no single source explains every topic on it. Flows into the cluster with different
    policies are an error: the caller must choose one.
    """
    into = [f for f in config.flows if f.target == cluster]
    chosen = [f for f in into if f.enabled] or into
    policies: dict[str, ReplicationPolicy] = {}
    for flow in chosen:
        policy = flow.policy
        if isinstance(policy, IdentityReplicationPolicy):  # topic.rename.format's too
            policy = dataclasses.replace(policy, source_cluster_alias=None)
        # Built-in policies compare by their settings (their repr); others by class.
        key = repr(policy) if dataclasses.is_dataclass(policy) else type(policy).__qualname__
        policies.setdefault(key, policy)
    if len(policies) > 1:
        names = sorted({repr(p) for p in policies.values()})
        raise ValueError(
            f"the flows into {cluster} use different replication policies ({'; '.join(names)}): "
            "pass policy= to say which one names its topics"
        )
    return next(iter(policies.values()), DefaultReplicationPolicy())
