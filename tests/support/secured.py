"""Secured dev clusters in tests: grant and revoke the replication user's ACLs."""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from mirrorline.devcluster import DevClusters
from mirrorline.devsecurity import REPLICATION_USER
from mirrorline.permissions import Grant

PRINCIPAL = f"User:{REPLICATION_USER}"


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
    """Create the ACLs of `grants` on their clusters (as the admin user)."""
    by_cluster: dict[str, list[AclBinding]] = {}
    for grant in grants:
        by_cluster.setdefault(grant.cluster, []).extend(bindings(grant, principal))
    for alias, acls in by_cluster.items():
        admin = AdminClient(dict(dev.client_config(alias)))
        for future in admin.create_acls(acls).values():
            future.result(timeout=30)


def revoke(dev: DevClusters, alias: str, binding: AclBinding) -> None:
    admin = AdminClient(dict(dev.client_config(alias)))
    acl_filter = AclBindingFilter(
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )
    for future in admin.delete_acls([acl_filter]).values():
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
