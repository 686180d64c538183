"""Everything a flow's parts share: its configuration, typed settings and Kafka clients.

A flow has many collaborators (topics, progress, offset runs, offset syncs,
checkpoints, remote-topic metadata, gap detection, leadership), and each of
them needs some of the flow's settings and a client of its source or target.
Built once per flow, the context reads the settings once (`FlowSettings`) and
holds one `ClusterClients` per cluster, whose admin client every collaborator
shares instead of opening its own. The collaborators close what they own (their
producers); the flow closes the context, once, after all of them.

`flow` is the configuration with the operators' run-time list changes
applied (`follow`): collaborators that filter topics or groups read it each
time rather than keeping the one they were built with. Swapping it is one
assignment, so a reader sees the old filters or the new ones, never a mix.

Two kinds of clients stay apart on purpose: the health probes' (they need their
own error callback, see `engine.health`) and the heartbeats' (driver-wide, for
flows that may not run here at all).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from mirrorline.config.flow_settings import FlowSettings
from mirrorline.config.model import FlowConfig, Side
from mirrorline.control.flow_control import FlowControl
from mirrorline.kafka import ClusterClients

# Spark's Kafka source manages these itself and refuses them as options.
SPARK_MANAGED = frozenset(
    {
        "auto.offset.reset",
        "enable.auto.commit",
        "key.deserializer",
        "value.deserializer",
        "interceptor.classes",
        "group.id",
    }
)


class FlowContext:
    """One flow's configuration, typed settings and shared clients (see the module)."""

    def __init__(self, flow: FlowConfig) -> None:
        self.configured = flow  # as the file says, before run-time changes
        self.flow = flow
        self.settings = FlowSettings.of(flow)
        self.source = side_clients(flow, "source")
        self.target = side_clients(flow, "target")
        # Set by a collaborator whose news the flow should act on now rather than at
        # its next tick (leadership gained or lost, control records read).
        self.wake = threading.Event()

    @property
    def name(self) -> str:
        return self.flow.name

    def follow(self, control: FlowControl) -> bool:
        """Apply the run-time list changes of `control`; True when the filters changed."""
        effective = control.effective(self.configured)
        changed = (effective.topic_filter, effective.group_filter) != (
            self.flow.topic_filter,
            self.flow.group_filter,
        )
        if changed:
            self.flow = effective
        return changed

    @property
    def offset_syncs(self) -> ClusterClients:
        """The clients of the cluster holding the offset-syncs topic."""
        return self.source if self.flow.offset_syncs_cluster == self.flow.source else self.target

    def spark_source_options(self) -> dict[str, str]:
        """The source consumer's settings as options of Spark's Kafka source (`kafka.*`)."""
        return {f"kafka.{key}": value for key, value in self.source_reader_settings().items()}

    def source_reader_settings(self) -> dict[str, str]:
        """The source consumer's settings for the writer's own reader (`jvm/writer`).

        `max.poll.records` is the flow's, however the file wrote it (as a flow
        setting or a source consumer's).
        """
        settings = {
            key: str(value)
            for key, value in self.flow.java_client_settings("source", "consumer").items()
            if key not in SPARK_MANAGED
        }
        return {**settings, "max.poll.records": str(self.settings.max_poll_records)}

    def close(self) -> None:
        """Release the shared admin clients; the collaborators must be closed already."""
        self.source.close()
        self.target.close()

    def __repr__(self) -> str:
        return f"FlowContext({self.flow.name})"


def side_clients(
    flow: FlowConfig, side: Side, overrides: Mapping[str, Any] | None = None
) -> ClusterClients:
    """Clients of the flow's `side` cluster with that side's settings for each role, and
    `overrides` on top of every role's (a tool's `log_level`, say)."""
    alias = flow.source if side == "source" else flow.target
    extra = dict(overrides or {})
    return ClusterClients(
        alias,
        admin={**flow.client_settings(side, "admin"), **extra},
        producer={**flow.client_settings(side, "producer"), **extra},
        consumer={**flow.client_settings(side, "consumer"), **extra},
    )
