"""Topic ACL sync: the source's topic ACLs, copied to the remote topics on the target.

Every `sync.topic.acls.interval.seconds` a flow reads the topic ACLs of its
source (DescribeAcls: DESCRIBE on the source cluster is all it needs there)
and makes the target hold their copies, as MirrorMaker 2 does:

- only topic ACLs whose topic the flow replicates: a LITERAL name the flow
  replicates, a PREFIXED prefix one of its replicated topics starts with, or
  the wildcard `*`; group and cluster ACLs are never copied;
- the resource becomes the remote name (`orders` -> `A.orders`; a prefix
  gets the remote prefix; `*` from `A` becomes the prefix `A.`, or stays `*`
  under a policy that keeps names);
- ALLOW WRITE is never copied: only Mirrorline writes remote topics, and an
  application allowed to write `orders` must not write its copy. ALLOW ALL is
  copied as ALLOW READ. DENY entries are copied as they are.

Removing a source ACL removes its copy. So that the flow never deletes an ACL
an operator set on the target, it deletes only copies it created itself: the
set of its copies is kept in `mirrorline.acl-copies.internal` on the target
(compacted, one record per flow: key ``{"flow":..,"version":1}``, value
``{"acls":[..],"version":1}``), which also survives driver restarts and hand-overs.

A source cluster without an authorizer has no ACLs: nothing to copy, and
nothing is reported. A target without one cannot take copies of existing
ACLs; that is reported as the loop's error.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Set
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from mirrorline.admin_client import AdminClient
from mirrorline.config.model import FlowConfig
from mirrorline.flow_context import FlowContext
from mirrorline.formats import json_record
from mirrorline.internal_topic import COMPACTED, InternalTopic
from mirrorline.kafka import enum_name, error_code
from mirrorline.permissions import remote_resource

log = logging.getLogger(__name__)

COPIES_TOPIC = "mirrorline.acl-copies.internal"
FORMAT_VERSION = 1
_TIMEOUT_S = 10.0
_ANY: Any = None  # a filter field that matches every value
_ALL_TOPIC_ACLS = AclBindingFilter(
    ResourceType.TOPIC,
    _ANY,
    ResourcePatternType.ANY,
    _ANY,
    _ANY,
    AclOperation.ANY,
    AclPermissionType.ANY,
)


@dataclass(frozen=True, order=True)
class TopicAcl:
    """One topic ACL entry, in names (comparable, hashable, JSON-friendly)."""

    pattern: str  # LITERAL or PREFIXED
    name: str
    principal: str
    host: str
    operation: str
    permission: str  # ALLOW or DENY

    @classmethod
    def of(cls, binding: AclBinding) -> TopicAcl:
        return cls(
            enum_name(binding.resource_pattern_type),
            binding.name,
            binding.principal,
            binding.host,
            enum_name(binding.operation),
            enum_name(binding.permission_type),
        )

    def binding(self) -> AclBinding:
        return AclBinding(
            ResourceType.TOPIC,
            self.name,
            ResourcePatternType[self.pattern],
            self.principal,
            self.host,
            AclOperation[self.operation],
            AclPermissionType[self.permission],
        )

    def __str__(self) -> str:
        return (
            f"{self.permission} {self.operation} for {self.principal} on topic "
            f"{self.name}{'*' if self.pattern == 'PREFIXED' else ''}"
        )


def copies_of(
    source_acls: Iterable[TopicAcl], flow: FlowConfig, replicated: Set[str]
) -> set[TopicAcl]:
    """The ACLs the target should hold for these source ACLs (see the module)."""
    copies = set()
    for acl in source_acls:
        if acl.permission == "ALLOW" and acl.operation == "WRITE":
            continue
        target = _remote_resource(acl, flow, replicated)
        if target is None:
            continue
        pattern, name = target
        operation = "READ" if (acl.permission, acl.operation) == ("ALLOW", "ALL") else acl.operation
        copies.add(TopicAcl(pattern, name, acl.principal, acl.host, operation, acl.permission))
    return copies


def _remote_resource(
    acl: TopicAcl, flow: FlowConfig, replicated: Set[str]
) -> tuple[str, str] | None:
    """Where `acl` is copied to, or None when it covers no replicated topic."""
    if acl.pattern == "LITERAL":
        copied = acl.name == "*" or acl.name in replicated
    else:
        copied = any(t.startswith(acl.name) for t in replicated)
    return remote_resource(flow, acl.pattern, acl.name) if copied else None


@dataclass(frozen=True)
class AclPlan:
    """What one round does on the target, and the copies it then owns."""

    create: frozenset[TopicAcl]
    delete: frozenset[TopicAcl]
    owned: frozenset[TopicAcl]


def plan(wanted: Set[TopicAcl], on_target: Set[TopicAcl], owned: Set[TopicAcl]) -> AclPlan:
    """Create the wanted copies the target lacks; delete the owned copies no longer wanted.

    An ACL that was on the target before the flow copied it is not the flow's:
    it is left in place when its source ACL goes.
    """
    create = frozenset(wanted - on_target)
    delete = frozenset((owned - wanted) & on_target)
    return AclPlan(create, delete, frozenset((owned & wanted) | create))


class TopicAclSync:
    """One flow's topic ACL sync (see the module); `sync` is its control loop."""

    def __init__(self, context: FlowContext) -> None:
        self.flow = context.flow
        self._source = context.source
        self._target = context.target
        self._copies = InternalTopic(
            COPIES_TOPIC,
            context.target,
            what=f"flow {context.name}: ACL copies",
            config=COMPACTED,
            replication_factor=context.settings.replication_factor,
        )
        self._owned: frozenset[TopicAcl] | None = None  # read from the topic on first use
        self._quiet_source = False

    def sync(self, replicated: Iterable[str]) -> AclPlan | None:
        """One round; None when the source has no authorizer (nothing to copy)."""
        try:
            source = _describe(self._source.admin)
        except _NoAuthorizer:
            if not self._quiet_source:
                log.info(
                    "flow %s: %s has no authorizer, no ACL to copy",
                    self.flow.name,
                    self.flow.source,
                )
                self._quiet_source = True
            return None
        self._quiet_source = False
        wanted = copies_of(source, self.flow, set(replicated))
        try:
            on_target = set(_describe(self._target.admin))
        except _NoAuthorizer:
            if not wanted:
                return None
            raise RuntimeError(
                f"target {self.flow.target} has no authorizer, so the {len(wanted)} topic ACLs "
                f"of {self.flow.source} cannot be copied (or set sync.topic.acls.enabled = false)"
            ) from None
        owned = self._owned_copies()
        step = plan(wanted, on_target, owned)
        if step.create:
            _check_all(self._target.admin.create_acls([a.binding() for a in sorted(step.create)]))
        if step.delete:
            _check_all(
                self._target.admin.delete_acls(
                    [exact_filter(a.binding()) for a in sorted(step.delete)]
                )
            )
        if step.owned != owned:
            self._save(step.owned)
        for acl in sorted(step.create):
            log.info("flow %s: copied ACL %s", self.flow.name, acl)
        for acl in sorted(step.delete):
            log.info("flow %s: removed copied ACL %s", self.flow.name, acl)
        return step

    def close(self) -> None:
        self._copies.close()

    def _owned_copies(self) -> frozenset[TopicAcl]:
        if self._owned is None:
            owned: frozenset[TopicAcl] = frozenset()
            key = self._key()
            for message in self._copies.read(missing_ok=True, timeout=_TIMEOUT_S):
                if message.key() == key:
                    owned = _decode(message.value())
            self._owned = owned
        return self._owned

    def _save(self, owned: frozenset[TopicAcl]) -> None:
        self._copies.ensure(_TIMEOUT_S)
        value = json_record({"acls": [asdict(a) for a in sorted(owned)], "version": FORMAT_VERSION})
        self._copies.write([(self._key(), value)], timeout=_TIMEOUT_S)
        self._owned = owned

    def _key(self) -> bytes:
        return json_record({"flow": self.flow.name, "version": FORMAT_VERSION})


class _NoAuthorizer(Exception):
    """The cluster answers DescribeAcls with SECURITY_DISABLED."""


def _describe(admin: AdminClient) -> list[TopicAcl]:
    try:
        bindings = admin.describe_acls(_ALL_TOPIC_ACLS, request_timeout=_TIMEOUT_S).result(
            timeout=_TIMEOUT_S
        )
    except KafkaException as exc:
        if error_code(exc) == KafkaError.SECURITY_DISABLED:
            raise _NoAuthorizer from None
        raise
    return [TopicAcl.of(b) for b in bindings]


def exact_filter(binding: AclBinding) -> AclBindingFilter:
    """The filter that matches `binding` and nothing else (for DeleteAcls)."""
    return AclBindingFilter(
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )


def _check_all(futures: Mapping[Any, Future[Any]]) -> None:
    for future in futures.values():
        future.result(timeout=_TIMEOUT_S)


def _decode(value: bytes | None) -> frozenset[TopicAcl]:
    if value is None:
        return frozenset()
    try:
        document = json.loads(value)
        if document.get("version") != FORMAT_VERSION:
            return frozenset()
        return frozenset(TopicAcl(**entry) for entry in document["acls"])
    except (ValueError, TypeError, KeyError) as exc:
        log.warning("%s: a record that is not an ACL list, ignored (%s)", COPIES_TOPIC, exc)
        return frozenset()
