"""A flow between two of the session's clusters under aliases of its own.

Its aliases (`src<id>`, `dst<id>`) are the test's alone, so the entries the
flow writes to shared internal topics (remote-topic metadata, checkpoints) are
too, whatever other tests wrote there.
"""

from __future__ import annotations

import uuid

from mirrorline.config import MirrorConfig, parse_config
from mirrorline.config.model import FlowConfig


def own_flow(source_cluster, target_cluster, extra: str = "") -> tuple[MirrorConfig, FlowConfig]:
    """A configuration with an enabled flow `src<id>->dst<id>` from `source_cluster` to
    `target_cluster` (internal topics of one replica, and the `extra` lines), and
    that flow."""
    suffix = uuid.uuid4().hex[:6]
    src, dst = f"src{suffix}", f"dst{suffix}"
    config = parse_config(
        f"clusters = {src}, {dst}\n"
        f"{src}.bootstrap.servers = {source_cluster.bootstrap_servers}\n"
        f"{dst}.bootstrap.servers = {target_cluster.bootstrap_servers}\n"
        "replication.factor = 1\n"
        "checkpoints.topic.replication.factor = 1\n"
        f"{src}->{dst}.enabled = true\n" + extra
    )
    return config, config.flow(src, dst)
