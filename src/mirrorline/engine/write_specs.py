"""What a flow's executors are given to write its records (`batch_writer.WriteSpec`),
built once per start of the data path from the flow's settings, and refreshed with
the target topics' size limits for each batch."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from mirrorline.engine.batch_writer import WriteSpec
from mirrorline.engine.progress import PROGRESS_TOPIC
from mirrorline.engine.provenance import Provenance
from mirrorline.engine.transactional import ExactlyOnceSpec, position_group
from mirrorline.flow_context import FlowContext


def write_spec(
    context: FlowContext,
    ready: Mapping[str, int],
    provenance: Provenance | None,
    task_slots: int,
) -> WriteSpec:
    """What the executors need to write the flow's records; shipped with every task.

    `task_slots`: the most tasks one executor runs at once (`executor_task_slots`).
    """
    settings = context.settings
    exactly_once = (
        ExactlyOnceSpec(
            progress_topic=PROGRESS_TOPIC,
            position_group=position_group(context.name),
            consumer_settings=dict(context.flow.java_client_settings("target", "consumer")),
        )
        if settings.exactly_once
        else None
    )
    return WriteSpec(
        flow=context.name,
        # The writer is a Java client: Java names, as in MM2's file.
        producer_settings=dict(context.flow.java_client_settings("target", "producer")),
        source_settings=context.source_reader_settings(),
        remote_topics={t: context.flow.remote_topic(t) for t in ready},
        offset_lag_max=settings.offset_lag_max,
        provenance=provenance,
        tolerate_refusals=settings.tolerate_refusals,
        dead_letter_topic=settings.dead_letter_topic,
        exactly_once=exactly_once,
        tasks_max=settings.tasks_max,
        task_slots=task_slots,
        partitions_per_executor=partitions_per_executor(
            sum(ready.values()), settings.tasks_max, task_slots
        ),
        transforms=context.flow.transforms.as_json(),
    )


def partitions_per_executor(partitions: int, tasks_max: int | None, task_slots: int) -> int:
    """The source partitions one executor's shared producer gets room for: one per task
    slot (a task reads its partitions one after the other, and writes about one at a
    time), or under `tasks.max` every partition of the tasks running at once."""
    tasks = max(1, min(tasks_max or partitions, partitions))
    return min(task_slots, tasks) * math.ceil(partitions / tasks)


def with_size_limits(spec: WriteSpec, limits: Mapping[str, int]) -> WriteSpec:
    """One batch's spec: the target topics' size limits as last seen (they change any time)."""
    return dataclasses.replace(spec, size_limits=limits)
