"""Keeps a flow's remote topics in step with its source topics.

Every `refresh.topics.interval.seconds` the source is listed: topics the flow
replicates (filter, policy, loop rules) get a remote topic on the target, created
with the same partition count before any record flows, and partitions added at
the source are added to the remote topic. Every
`sync.topic.configs.interval.seconds` the topic configs that pass the flow's
config-property filter are copied. Deletions at the source are never mirrored.

A topic that cannot be created or altered is reported in `problems` with the
broker's reason; the flow's other topics are unaffected. The data query reads
exactly the partitions `ready()` returns, so no record is ever written to a topic
or partition that does not exist on the target yet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from mirrorline.admin_client import AdminClient
from mirrorline.config.model import FlowConfig
from mirrorline.control.remote_topics import read_remote_topics
from mirrorline.flow_context import FlowContext
from mirrorline.kafka import KafkaOperationError

# Short enough that an unreachable cluster delays only this flow's loop, briefly.
_TIMEOUT_S = 10.0
# Most partitions one CreateTopics request adds: a KRaft controller refuses a request
# that adds more than 10,000 records at once (a topic's record and one per partition).
_PARTITIONS_PER_CREATE = 5000


@dataclass(frozen=True)
class TopicProblem:
    topic: str
    action: str
    reason: str

    def __str__(self) -> str:
        return f"{self.action} {self.topic}: {self.reason}"


class TopicManager:
    """The topic side of one flow: creation, partitions and configs on the target."""

    def __init__(self, context: FlowContext) -> None:
        self._context = context
        self._clients = (context.source, context.target)
        self._replication_factor = context.settings.replication_factor
        self._lock = threading.Lock()
        self._ready: dict[str, int] = {}
        # Kept apart because each loop clears only its own problems.
        self._structure_problems: dict[str, TopicProblem] = {}
        self._config_problems: dict[str, TopicProblem] = {}
        # Remote topic -> its max.message.bytes, as last described.
        self._size_limits: dict[str, int] = {}

    # -- results ---------------------------------------------------------------------

    @property
    def flow(self) -> FlowConfig:
        """The flow with its current run-time list changes (`FlowContext.follow`)."""
        return self._context.flow

    def ready(self) -> dict[str, int]:
        """Source topic -> number of its partitions that exist on the target."""
        with self._lock:
            return dict(self._ready)

    def size_limits(self) -> dict[str, int]:
        """Remote topic -> the largest record batch it accepts (`max.message.bytes`).

        The writer keeps larger records (and batches) away from the target: the
        broker refuses a whole batch when it is over the limit, including the
        records in it that would fit alone.
        """
        with self._lock:
            return dict(self._size_limits)

    def problems(self) -> list[TopicProblem]:
        with self._lock:
            return [*self._structure_problems.values(), *self._config_problems.values()]

    @property
    def _source(self) -> AdminClient:
        return self._clients[0].admin

    @property
    def _target(self) -> AdminClient:
        return self._clients[1].admin

    def source_cluster_id(self) -> str:
        return _cluster_id(self._source, self.flow.source)

    def target_cluster_id(self) -> str:
        return _cluster_id(self._target, self.flow.target)

    # -- loops -----------------------------------------------------------------------

    def refresh(
        self, announce: Callable[[Mapping[str, int]], object] | None = None
    ) -> dict[str, int]:
        """Create missing remote topics and partitions; returns `ready()`.

        `announce` hears the topics to replicate (source topic -> partitions) before
        any remote topic is created for them.
        """
        source = _partition_counts(self._source)
        target = _partition_counts(self._target)
        ready: dict[str, int] = {}
        returning = self._copies_from_target()
        wanted = {
            t: n
            for t, n in source.items()
            if self.flow.should_replicate_topic(t) and t not in returning
        }
        missing = {t: n for t, n in wanted.items() if self.flow.remote_topic(t) not in target}
        if announce is not None and missing:
            announce(wanted)
        problems = self._create_all(missing)
        for topic, partitions in sorted(wanted.items()):
            remote = self.flow.remote_topic(topic)
            if topic in missing:
                if topic not in problems:
                    ready[topic] = partitions
                continue
            try:
                if target[remote] < partitions:
                    self._add_partitions(remote, partitions)
                ready[topic] = partitions
            except _TopicActionFailed as failure:
                problems[topic] = failure.problem
                ready[topic] = min(partitions, target[remote])  # the partitions that exist
        with self._lock:
            self._ready = ready
            self._structure_problems = problems
        return dict(ready)

    def _copies_from_target(self) -> set[str]:
        """Source topics that the reverse flow (target->source) writes, under a policy that
        renames topics without naming clusters (`topic.rename.format`).

        Their names cannot show that they came from this flow's target, and their
        records' provenance would keep them out one by one, but the topic itself
        would be created on the target under a longer name, whose copy would come
        back longer still. The reverse flow's remote-topic metadata, in this flow's
        source, names them. A topic the policy does not rename may also hold local
        records (aggregation): only records' provenance decides for it.
        """
        policy = self.flow.policy
        if not policy.provenance_by_cluster:
            return set()
        reverse = f"{self.flow.target}->{self.flow.source}"
        published = read_remote_topics(self._clients[0].consumer_settings, timeout=10.0)
        return {remote for topic, remote in published.get(reverse, {}).items() if remote != topic}

    def structure_complete(self) -> bool:
        """Whether the last refresh created or grew every remote topic it wanted."""
        with self._lock:
            return not self._structure_problems

    def sync_configs(self) -> bool:
        """Copy the selected topic configs of every ready topic to its remote topic;
        whether every topic's were copied (the others are in `problems`)."""
        problems: dict[str, TopicProblem] = {}
        limits: dict[str, int] = {}
        remotes = {topic: self.flow.remote_topic(topic) for topic in sorted(self.ready())}
        # One DescribeConfigs request per cluster for all topics, not two per topic.
        sources = _describe(self._source, list(remotes))
        targets = _describe(self._target, list(remotes.values()))
        for topic, remote in remotes.items():
            try:
                current = _entries(targets, remote)
                limit = current.get("max.message.bytes")
                if limit is not None and limit.value:
                    limits[remote] = int(limit.value)
                changes = self._config_changes(_entries(sources, topic), current)
                if changes:
                    self._alter(remote, changes)
            except _TopicActionFailed as failure:
                problems[topic] = failure.problem
        with self._lock:
            self._config_problems = problems
            self._size_limits = limits
        return not problems

    # -- actions ---------------------------------------------------------------------

    def _create_all(self, missing: Mapping[str, int]) -> dict[str, TopicProblem]:
        """Create the remote topics of `missing` (source topic -> partitions) with the
        source topics' copied configs; the problems of those that could not be, by
        source topic. One DescribeConfigs request for all of them and CreateTopics
        requests of up to `_PARTITIONS_PER_CREATE` partitions, not two requests per
        topic one after the other (two thousand for a thousand new topics)."""
        problems: dict[str, TopicProblem] = {}
        described = _describe(self._source, sorted(missing))
        new: dict[str, NewTopic] = {}  # by source topic
        for topic, partitions in sorted(missing.items()):
            try:
                configs = self._copied_configs(_entries(described, topic))
            except _TopicActionFailed as failure:
                problems[topic] = failure.problem
                continue
            new[topic] = NewTopic(
                self.flow.remote_topic(topic),
                num_partitions=partitions,
                replication_factor=self._replication_factor,
                config=configs,
            )
        for batch in _batches(list(new.items()), _PARTITIONS_PER_CREATE):
            futures = self._target.create_topics(
                [remote for _, remote in batch], request_timeout=_TIMEOUT_S
            )
            for topic, remote in batch:
                try:
                    futures[remote.topic].result(_TIMEOUT_S)
                except KafkaException as exc:
                    if exc.args[0].code() != exc.args[0].TOPIC_ALREADY_EXISTS:
                        problems[topic] = _TopicActionFailed(remote.topic, "create", exc).problem
        return problems

    def _add_partitions(self, remote: str, partitions: int) -> None:
        try:
            self._target.create_partitions(
                [NewPartitions(remote, partitions)], request_timeout=_TIMEOUT_S
            )[remote].result(_TIMEOUT_S)
        except KafkaException as exc:
            raise _TopicActionFailed(remote, f"add partitions (to {partitions}) to", exc) from None

    def _copied_configs(self, source: Mapping[str, ConfigEntry]) -> dict[str, str]:
        """The source topic's config entries the flow copies."""
        selected = {}
        for name, entry in source.items():
            if entry.is_sensitive or entry.value is None:
                continue
            explicit = _set_on_topic(entry)
            keep = (
                self.flow.config_property_filter.should_replicate(name)
                if explicit
                else (self.flow.config_property_filter.should_replicate_source_default(name))
            )
            if keep:
                selected[name] = entry.value
        return selected

    def _config_changes(
        self, source: Mapping[str, ConfigEntry], current: Mapping[str, ConfigEntry]
    ) -> list[ConfigEntry]:
        wanted = self._copied_configs(source)
        changes = [
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in sorted(wanted.items())
            if current.get(name) is None or current[name].value != value
        ]
        # A property set on the remote topic but no longer at the source goes back
        # to the target's default, so the remote topic keeps mirroring the source.
        changes += [
            ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE)
            for name, entry in sorted(current.items())
            if _set_on_topic(entry)
            and name not in wanted
            and self.flow.config_property_filter.should_replicate(name)
        ]
        return changes

    def _alter(self, remote: str, changes: list[ConfigEntry]) -> None:
        resource = ConfigResource(ResourceType.TOPIC, remote, incremental_configs=changes)
        try:
            for future in self._target.incremental_alter_configs([resource]).values():
                future.result(_TIMEOUT_S)
        except KafkaException as exc:
            raise _TopicActionFailed(remote, "sync configs of", exc) from None


class _TopicActionFailed(Exception):
    def __init__(self, remote: str, action: str, exc: KafkaException | Exception) -> None:
        reason = exc.args[0].str() if isinstance(exc, KafkaException) else str(exc)
        super().__init__(reason)
        self.problem = TopicProblem(remote, action, reason)


def _batches(topics: list[tuple[str, NewTopic]], most: int) -> list[list[tuple[str, NewTopic]]]:
    """`topics` in order, in batches of at most `most` partitions (a larger topic alone)."""
    batches: list[list[tuple[str, NewTopic]]] = []
    size = most
    for item in topics:
        partitions = item[1].num_partitions
        if size + partitions > most:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += partitions
    return batches


def _set_on_topic(entry: ConfigEntry) -> bool:
    """Whether the entry is set on the topic itself (librdkafka hands over its number)."""
    source: object = entry.source
    number = source.value if isinstance(source, ConfigSource) else source
    return bool(number == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)


def _cluster_id(admin: AdminClient, alias: str) -> str:
    cluster_id = admin.list_topics(timeout=_TIMEOUT_S).cluster_id
    if cluster_id is None:
        raise KafkaOperationError(f"cluster {alias} did not say its cluster id")
    return cluster_id


def _partition_counts(admin: AdminClient) -> dict[str, int]:
    metadata = admin.list_topics(timeout=_TIMEOUT_S)
    return {
        name: len(meta.partitions) for name, meta in metadata.topics.items() if meta.error is None
    }


def _describe(admin: AdminClient, topics: list[str]) -> dict[str, Future]:
    """Ask for the configs of all `topics` at once; `_entries` gives one topic's answer."""
    if not topics:
        return {}
    futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in topics])
    return {resource.name: future for resource, future in futures.items()}


def _entries(described: Mapping[str, Future], topic: str) -> Mapping[str, ConfigEntry]:
    try:
        return described[topic].result(_TIMEOUT_S)
    except KafkaException as exc:
        raise _TopicActionFailed(topic, "describe configs of", exc) from None
