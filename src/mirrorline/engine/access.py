"""Which of a flow's required ACLs its clusters deny, named exactly.

A missing ACL shows up in Kafka's answers as a bare "Topic authorization
failed" from whichever request met it first, often deep inside Spark's
executors. So a flow asks the brokers what its principals may do instead:
DescribeTopics with the authorized operations, for the topics it uses on each
side, compared with `permissions.required_grants`. What is missing becomes
one sentence per resource:

    west denies WRITE, CREATE on topic east.orders to the flow's principal
    (needed for: remote topics)

The check runs with the topic refresh while the flow runs, and right away
when the flow fails while its clusters answer, so the failure's reason names
the ACL to grant. Topics that do not exist yet are skipped (CREATE on them is
only visible when creating them fails). Transactional ids and groups have no
such question in Kafka's protocol; their denials surface as the failing loop's
error. The cluster resource has one (DescribeCluster), which the running flow
leaves to that error too and `mirrorline doctor` asks up front
(`doctor_clusters`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicCollection

from mirrorline.config.model import FlowConfig
from mirrorline.engine.progress import PROGRESS_TOPIC
from mirrorline.flow_context import FlowContext
from mirrorline.kafka import ClusterClients, enum_name, error_code
from mirrorline.permissions import Grant, required_grants
from mirrorline.raw_metrics import METRICS_TOPIC

__all__ = ["AccessCheck", "Denied", "MissingPermissions", "denied_topics", "flow_topics"]

_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Denied:
    """Operations a cluster denies on one topic that the flow needs."""

    cluster: str
    topic: str
    operations: tuple[str, ...]
    why: str
    principal: str

    def __str__(self) -> str:
        return (
            f"{self.cluster} denies {', '.join(self.operations)} on topic {self.topic} "
            f"to {self.principal} (needed for: {self.why})"
        )


class MissingPermissions(RuntimeError):
    """The flow's principals lack ACLs it needs; the message names each of them."""

    def __init__(self, denied: Iterable[Denied]) -> None:
        self.denied = tuple(denied)
        super().__init__("; ".join(str(d) for d in self.denied) + " (see `mirrorline acls`)")


class AccessCheck:
    """Compares a flow's required topic ACLs with what its clusters allow."""

    def __init__(self, context: FlowContext, ready: Callable[[], Mapping[str, int]]) -> None:
        self._context = context
        self._clients = {context.source.alias: context.source, context.target.alias: context.target}
        self._ready = ready

    @property
    def flow(self) -> FlowConfig:
        """The flow with its current run-time list changes (`FlowContext.follow`)."""
        return self._context.flow

    def check(self) -> None:
        """Raise `MissingPermissions` naming every denied operation (the control loop)."""
        denied = self.denied()
        if denied:
            raise MissingPermissions(denied)

    def denied(self) -> list[Denied]:
        grants = required_grants(self.flow)
        found: list[Denied] = []
        for alias, topics in flow_topics(self.flow, self._ready()).items():
            found += denied_topics(self._clients[alias], alias, topics, grants)
        return found


def flow_topics(flow: FlowConfig, ready: Iterable[str]) -> dict[str, set[str]]:
    """The topics a flow uses, per cluster alias, when it replicates source topics `ready`."""
    topics: dict[str, set[str]] = {flow.source: set(ready), flow.target: set()}
    topics[flow.target].update(flow.remote_topic(t) for t in topics[flow.source])
    topics[flow.target].update({PROGRESS_TOPIC, METRICS_TOPIC})
    if flow.value("emit.checkpoints.enabled"):
        topics[flow.target].add(flow.policy.checkpoints_topic(flow.source))
    topics[flow.offset_syncs_cluster].add(flow.offset_syncs_topic)
    return topics


def denied_topics(
    clients: ClusterClients,
    alias: str,
    topics: Iterable[str],
    grants: Iterable[Grant],
    timeout: float = _TIMEOUT_S,
) -> list[Denied]:
    """What cluster `alias` denies of the TOPIC `grants` on `topics`, as its brokers say.

    Topics that do not exist are skipped (see the module). Raises
    `KafkaException` when the cluster does not answer within `timeout`.
    """
    mine = [g for g in grants if g.cluster == alias and g.resource == "TOPIC"]
    allowed = _authorized(clients, topics, timeout)
    found: list[Denied] = []
    for topic in sorted(allowed):
        needed = [g for g in mine if g.covers("TOPIC", topic)]
        wanted = tuple(dict.fromkeys(op for g in needed for op in g.operations))
        have = allowed[topic]  # None: not even DESCRIBE, the topic is hidden
        missing = tuple(op for op in wanted if have is None or op not in have)
        if missing:
            why = "; ".join(dict.fromkeys(g.why for g in needed))
            found.append(Denied(alias, topic, missing, why, _principal(clients)))
    return found


def _authorized(
    clients: ClusterClients, topics: Iterable[str], timeout: float
) -> dict[str, set[str] | None]:
    """Topic -> the operations the principal may perform (None: not even DESCRIBE).

    Topics that do not exist, and every topic of a cluster without an
    authorizer (it reports no operations), are left out.
    """
    names = sorted(topics)
    if not names:
        return {}
    futures = clients.admin.describe_topics(
        TopicCollection(names), include_authorized_operations=True, request_timeout=timeout
    )
    answer: dict[str, set[str] | None] = {}
    for name, future in futures.items():
        try:
            description = future.result(timeout=timeout)
        except KafkaException as exc:
            code = error_code(exc)
            if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                answer[name] = None
            elif code != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
            continue
        operations = description.authorized_operations
        if operations is None:
            continue  # the cluster has no authorizer: nothing is denied
        answer[name] = {enum_name(op) for op in operations}
    return answer


def _principal(clients: ClusterClients) -> str:
    user = clients.admin_settings.get("sasl.username")
    return f"User:{user}" if user else "the flow's principal"
