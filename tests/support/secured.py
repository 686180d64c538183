"""Flows over secured dev clusters: their properties file, and the ACLs of their users."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from mirrorline.admin_client import AdminClient
from mirrorline.config import load_config
from mirrorline.control.acl_sync import exact_filter
from mirrorline.devcluster import DevClusters
from mirrorline.devsecurity import REPLICATION_USER
from mirrorline.permissions import Grant, heartbeat_grants, merged, required_grants

PRINCIPAL = f"User:{REPLICATION_USER}"

#: Settings that make the loops act within seconds (as `driving.write_config` does).
FAST = """refresh.topics.interval.seconds = 1
sync.topic.configs.interval.seconds = 1
sync.topic.acls.interval.seconds = 1
emit.checkpoints.interval.seconds = 1
refresh.groups.interval.seconds = 1
emit.metrics.interval.seconds = 1
"""


def bindings(grant: Grant, principal: str = PRINCIPAL) -> list[AclBinding]:
    return [
        AclBinding(
            # librdkafka calls Kafka's CLUSTER resource type BROKER.
            ResourceType.BROKER if grant.resource == "CLUSTER" else ResourceType[grant.resource],
            grant.name,
            ResourcePatternType[grant.pattern],
            principal,
            "*",
            AclOperation[operation],
            AclPermissionType.ALLOW,
        )
        for operation in grant.operations
    ]


def grant_all(dev: DevClusters, grants: Iterable[Grant], principal: str = PRINCIPAL) -> None:
    """Create the ACLs of `grants` on those of their clusters that are `dev`'s (as admin)."""
    by_cluster: dict[str, list[AclBinding]] = {}
    for grant in grants:
        by_cluster.setdefault(grant.cluster, []).extend(bindings(grant, principal))
    ours = {c.alias for c in dev.clusters()}
    for alias, acls in by_cluster.items():
        if alias not in ours:
            continue  # a cluster the test made up (unreachable, wrong password)
        admin = AdminClient(dict(dev.client_config(alias)))
        for future in admin.create_acls(acls).values():
            future.result(timeout=30)


def revoke(dev: DevClusters, alias: str, binding: AclBinding) -> None:
    admin = AdminClient(dict(dev.client_config(alias)))
    for future in admin.delete_acls([exact_filter(binding)]).values():
        future.result(timeout=30)


def revoke_everything(dev: DevClusters, alias: str, principal: str = PRINCIPAL) -> None:
    """Delete every ACL of `principal` on cluster `alias`."""
    admin = AdminClient(dict(dev.client_config(alias)))
    acl_filter = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        principal,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    for future in admin.delete_acls([acl_filter]).values():
        future.result(timeout=30)


def secured_config(path: Path, dev: DevClusters, body: str, *, truststores: str = "") -> Path:
    """The dev clusters' own properties file (replication user, `${file:}` password,
    CA) plus `FAST` and `body`; `truststores` lines replace its truststore settings."""
    lines = dev.properties_file.read_text().splitlines(keepends=True)
    if truststores:
        lines = [line for line in lines if ".ssl.truststore." not in line]
    path.write_text("".join(lines) + truststores + FAST + body)
    return path


def grant_documented(dev: DevClusters, config: Path) -> None:
    """Grant the replication user exactly what `mirrorline acls` lists for `config`."""
    loaded = load_config(config)
    grants = [g for f in loaded.enabled_flows() for g in required_grants(f)]
    grants += [g for f in loaded.heartbeat_flows() for g in heartbeat_grants(f)]
    grant_all(dev, merged(grants))


def topic_acls(dev: DevClusters, alias: str, topic: str) -> set[tuple[str, str, str]]:
    """(principal, operation, permission) of the LITERAL ACLs of `topic` on `alias`."""
    admin = AdminClient(dev.client_config(alias))
    acl_filter = AclBindingFilter(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    bindings = admin.describe_acls(acl_filter).result(timeout=30)
    return {(b.principal, b.operation.name, b.permission_type.name) for b in bindings}


def topic_acl(topic: str, principal: str, operation: AclOperation) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        principal,
        "*",
        operation,
        AclPermissionType.ALLOW,
    )


def add_acls(dev: DevClusters, alias: str, *bindings: AclBinding) -> None:
    admin = AdminClient(dev.client_config(alias))
    for future in admin.create_acls(list(bindings)).values():
        future.result(timeout=30)
