"""Provenance headers: how records carry where they have been.

With a replication policy that keeps topic names (`IdentityReplicationPolicy`),
names cannot reveal a loop: `orders` on A replicated to B is `orders` again, and
an A<->B pair of flows would bounce every record forever. So each replicated
record gets one header per hop,

    mirrorline.provenance = <source cluster id>:<source topic>

naming the cluster (by Kafka cluster id, not alias, so renamed aliases do not
matter) and topic it was read from. Before writing, the writer (`jvm/writer`,
class `Provenance`) skips any record whose provenance already names the target
cluster and the remote topic: a record never returns to a cluster and topic it
has been in. Under a policy that renames topics without naming clusters
(`topic.rename.format`), the rule is stricter (`by_cluster`): a record never
returns to a cluster it has been in, under any topic, or an A<->B pair would
write `orders` back to A as `orders.replica.replica`. Application headers are
left as they are; topic names cannot contain ':' and cluster ids are URL-safe
base64, so the value is unambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass

HEADER = "mirrorline.provenance"


@dataclass(frozen=True)
class Provenance:
    """The two clusters of a flow whose records carry provenance headers."""

    source_cluster_id: str
    target_cluster_id: str
    by_cluster: bool = False  # the stricter rule (see the module)
