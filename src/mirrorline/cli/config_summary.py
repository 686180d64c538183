"""The short summary `mirrorline config check` prints first, and its run-time part.

Pure formatting: a loaded configuration and, per flow, what its target cluster
says about it at run time (`Runtime`, read by `config_runtime`) become rows of
(label, text). The full per-setting tables are `config_cmd`'s, behind
`--settings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mirrorline.config.model import ClusterConfig, FlowConfig, Setting
from mirrorline.config.settings import INTERVAL_LOOPS
from mirrorline.control.flow_control import LISTS, FlowControl, ListName
from mirrorline.java_classes import (
    JavaConfigPropertyFilter,
    JavaGroupFilter,
    JavaTopicFilter,
    shown_class,
)
from mirrorline.operations.source_link import SourceLink

Row = tuple[str, str]


@dataclass(frozen=True)
class Runtime:
    """What a flow's target cluster says about the flow at run time, or why that is unknown.

    `control` is None when it was not read; `note` then says why: `offline`
    (`--offline`: not asked), or the cluster did not answer or refused.
    """

    target: str
    control: FlowControl | None = None
    note: str | None = None
    offline: bool = False
    first_start: str | None = None  # a takeover from MirrorMaker 2, when one is due
    link: SourceLink | None = None  # the source's distance (`config check` only)

    def to_dict(self, flow: FlowConfig) -> dict[str, Any] | None:
        """JSON: each list as in the file, as changed and as effective; None when not read."""
        if self.control is None:
            return None
        document = self.control.to_dict()
        views = {name: self.control.view(flow, name) for name in LISTS}
        document["lists"] = {
            name: {
                "file": list(v.configured),
                "added": list(v.added),
                "removed": list(v.removed),
                "effective": list(v.effective),
            }
            for name, v in views.items()
        }
        return {"read_from": self.target, **document, "first_start": self.first_start}


def display(setting: Setting[Any]) -> str:
    """A setting's text as it may be shown: `[hidden]` for secrets, `""` for empty."""
    if setting.secret:
        return setting.shown
    return setting.text if setting.text != "" else '""'


def cluster_row(cluster: ClusterConfig) -> Row:
    """`alias`, and its bootstrap servers with a security protocol other than PLAINTEXT."""
    admin = cluster.clients["admin"]
    if "bootstrap.servers" not in admin:
        return cluster.alias, "no bootstrap servers"
    servers = display(admin.setting("bootstrap.servers"))
    protocol = admin.get("security.protocol", "plaintext")
    if protocol.lower() != "plaintext":
        servers += f" ({protocol.upper()})"
    return cluster.alias, servers


def flow_rows(flow: FlowConfig, runtime: Runtime | None) -> list[Row]:
    """The summary of one flow: its lists, naming, mode, data path, loops and run-time state."""
    rows: list[Row] = []
    control = runtime.control if runtime is not None else None
    for name in LISTS:
        rows.extend(_list_rows(flow, name, control))
    rows.append(("policy", _policy(flow)))
    if isinstance(flow.config_property_filter, JavaConfigPropertyFilter):
        rows.append(("topic configs", f"chosen by {flow.config_property_filter.java.class_name}"))
    rows.append(("mode", _mode(flow)))
    rows.append(("data path", _data_path(flow)))
    if flow.transforms.transforms:
        rows.append(("transforms", _transforms(flow)))
    on, off = loops(flow)
    rows.append(("control loops", ", ".join(on) or "none"))
    if off:
        rows.append(("", f"off: {', '.join(off)}"))
    if runtime is not None:
        rows.extend(runtime_rows(runtime))
        if runtime.link is not None:
            rows.extend(link_rows(runtime.link))
    return rows


def link_rows(link: SourceLink) -> list[Row]:
    """The source's distance, what it limits, and what to change."""
    rows = [("source link", link.summary)]
    rows.extend(("", fact) for fact in link.facts)
    rows.extend(("advice", advice) for advice in link.advice)
    return rows


def runtime_rows(runtime: Runtime) -> list[Row]:
    """The run-time lines: unknown (and why), or the changes and the wanted state."""
    control = runtime.control
    if control is None:
        unknown = "" if runtime.offline else "run-time changes unknown: "
        return [("run time", f"{unknown}{runtime.note}")]
    changed = sum(len(c.added) + len(c.removed) for c in control.lists.values())
    if changed:
        what = f"{changed} list change{'s' if changed != 1 else ''} (shown above)"
    else:
        what = "no list changes"
    rows = [("run time", f"{what}, read from {runtime.target}")]
    if runtime.first_start is not None:
        rows.append(("first start", runtime.first_start))
    if control.state != "running":
        rows.append(("wanted state", f"{control.state} (an operator asked for it at run time)"))
    if control.positions is not None:
        count = len(control.positions.offsets)
        rows.append(("start positions", f"{count} partitions requested, not applied yet"))
    return rows


def loops(flow: FlowConfig) -> tuple[list[str], list[str]]:
    """Control loops that run with their intervals (`emit.checkpoints 60 s`), and those off."""
    on: list[str] = []
    off: list[str] = []
    for loop in INTERVAL_LOOPS:
        interval = flow.interval(loop)
        if interval is None:
            off.append(loop)
        else:
            on.append(f"{loop} {_seconds(interval.total_seconds())}")
    return on, off


def _list_rows(flow: FlowConfig, name: ListName, control: FlowControl | None) -> list[Row]:
    view = (control or FlowControl(flow.name)).view(flow, name)
    chooser = flow.topic_filter if name.startswith("topics") else flow.group_filter
    if isinstance(chooser, JavaTopicFilter | JavaGroupFilter):
        # The class decides; only entries added at run time are lists.
        chosen: list[Row] = []
        if not name.endswith(".exclude"):
            chosen.append((name, f"chosen by {chooser.java.class_name}"))
        if view.added:
            chosen.append((name, f"added at run time: {_patterns(view.added)}"))
        return chosen
    if not view.changed:
        default = " (default)" if flow.setting(name).origin.is_default else ""
        return [(name, _patterns(view.configured) + default)]
    rows: list[Row] = [(name, f"{_patterns(view.effective)} (effective, changed at run time)")]
    rows.append(("", f"in the file: {_patterns(view.configured)}"))
    if view.added:
        rows.append(("", f"added at run time: {_patterns(view.added)}"))
    if view.removed:
        rows.append(("", f"removed at run time: {_patterns(view.removed)}"))
    return rows


def _patterns(entries: tuple[str, ...]) -> str:
    return ", ".join(entries) if entries else "(none)"


def _policy(flow: FlowConfig) -> str:
    name = shown_class(flow.policy)
    try:
        example = f"orders → {flow.remote_topic('orders')}"
    except Exception:  # a custom policy may refuse the example name
        return name
    return f"{name} ({example})"


def _transforms(flow: FlowConfig) -> str:
    """Each transform in order: its name, its class's short name, and its guard."""
    steps = []
    for t in flow.transforms.transforms:
        guard = f" unless {t.predicate}" if t.negate else f" if {t.predicate}"
        short = t.plugin.class_name.rsplit(".", 1)[-1]
        steps.append(f"{t.name} ({short}{guard if t.predicate else ''})")
    return ", ".join(steps)


def _mode(flow: FlowConfig) -> str:
    exactly_once = flow.value("exactly.once.source.support") == "enabled"
    mode = "exactly-once (Kafka transactions)" if exactly_once else "at-least-once"
    if flow.value("errors.tolerance") == "all":
        dead = flow.value("errors.deadletterqueue.topic.name")
        mode += f"; records the target refuses are skipped{f' to {dead}' if dead else ''}"
    return mode


def _data_path(flow: FlowConfig) -> str:
    tasks = flow.setting("tasks.max")
    real_time = flow.value("data.path.mode") == "real-time"
    if not tasks.origin.is_default:
        spread = f"at most {tasks.value} tasks"
    elif real_time:
        spread = "one task per source partition"
    else:
        spread = "one task per executor task slot, each reading several partitions"
    if real_time:
        batch = _seconds(flow.value("real-time.batch.ms") / 1000)
        return f"real-time (batches of {batch}, progress saved four times a second), {spread}"
    duration = _seconds(flow.value("micro-batch.duration.ms") / 1000)
    most = flow.value("micro-batch.max.records")
    bound = f", at most {most} records" if most else ""
    return f"micro-batch (batches of about {duration} on a backlog{bound}), {spread}"


def _seconds(value: float) -> str:
    return f"{value:g} s"
