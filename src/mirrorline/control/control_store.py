"""Reading and writing the control records of flows in one target cluster.

What the records are and mean (keys, values, format version, how they fold into
each flow's `FlowControl`) is `control.flow_control`; this is where they are kept:
the compacted control topic, written by the operator's commands and read by them
and by every driver of the flow.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from mirrorline.config.model import FlowConfig
from mirrorline.control.flow_control import (
    CONTROL_TOPIC,
    FORMAT_VERSION,
    ControlFold,
    FlowControl,
    ListChanges,
    ListName,
    PositionRequest,
    SourcePartition,
    State,
    configured_list,
)
from mirrorline.formats import json_record
from mirrorline.internal_topic import COMPACTED, InternalTopic
from mirrorline.kafka import ClusterClients

# How often a wait for the drivers reads the control records again.
_POLL_S = 0.5


class ControlStore:
    """Reads and writes the control records of flows into one target cluster."""

    def __init__(self, target: ClusterClients, *, replication_factor: int = -1) -> None:
        self._topic = InternalTopic(
            CONTROL_TOPIC,
            target,
            what=f"control records on {target.alias}",
            config=COMPACTED,
            replication_factor=replication_factor,
        )

    def ensure_topic(self, timeout: float = 30.0) -> None:
        self._topic.ensure(timeout)

    def read(self, flow: str, timeout: float = 30.0) -> FlowControl:
        """What the control topic says about `flow` now (nothing yet: all defaults)."""
        return self.read_all(timeout).flow(flow)

    def read_all(self, timeout: float = 30.0) -> ControlFold:
        """Every flow's control records on this cluster, as of now."""
        fold = ControlFold()
        for msg in self._topic.read(missing_ok=True, timeout=timeout):
            fold.add(msg)
        return fold

    def change_list(
        self,
        flow: FlowConfig,
        name: ListName,
        *,
        add: Iterable[str] = (),
        remove: Iterable[str] = (),
        timeout: float = 30.0,
    ) -> FlowControl:
        """Add and remove patterns of one list; returns the flow's control after it.

        Adding a pattern the file has and a change removed withdraws the removal;
        removing an added pattern withdraws the addition; removing a configured
        pattern records the removal. Raises `ValueError` for removing a pattern the
        effective list does not hold.
        """
        current = self.read(flow.name, timeout)
        changes = current.changes(name)
        configured = configured_list(flow, name)
        effective = changes.apply(configured)
        added, removed = list(changes.added), list(changes.removed)
        records: list[tuple[bytes, bytes | None]] = []
        for entry in remove:
            if entry not in effective:
                raise ValueError(
                    f"{entry!r} is not in flow {flow.name}'s {name} list "
                    f"(it holds: {', '.join(effective) or 'nothing'})"
                )
            if entry in configured:
                removed.append(entry)
                records.append((_list_key(flow.name, name, entry), _list_value("remove")))
            else:
                added.remove(entry)
                records.append((_list_key(flow.name, name, entry), None))
        for entry in add:
            if entry in effective:
                continue
            if entry in removed:
                removed.remove(entry)
                records.append((_list_key(flow.name, name, entry), None))
            else:
                added.append(entry)
                records.append((_list_key(flow.name, name, entry), _list_value("add")))
        if records:
            self.ensure_topic(timeout)
            self._topic.write(records, timeout=timeout)
        lists = {**current.lists, name: ListChanges(tuple(added), tuple(removed))}
        return replace(current, lists={n: c for n, c in lists.items() if c})

    def set_state(
        self,
        flow: str,
        state: State,
        *,
        restart: bool = False,
        current: FlowControl | None = None,
        timeout: float = 30.0,
    ) -> FlowControl:
        """Ask every driver of `flow` for `state` (and a restart); returns the new control.

        `current` is the flow's control as just read, if the caller has it (the
        restart counter counts on from it).
        """
        if current is None:
            current = self.read(flow, timeout)
        changed = replace(
            current,
            state=state,
            restarts=current.restarts + (1 if restart else 0),
            state_changed_ms=_now_ms(),
        )
        value = {
            "restarts": changed.restarts,
            "state": state,
            "updated_ms": changed.state_changed_ms,
            "version": FORMAT_VERSION,
        }
        self._put(flow, "state", value, timeout)
        return changed

    def request_positions(
        self, flow: str, offsets: Mapping[SourcePartition, int], timeout: float = 30.0
    ) -> PositionRequest:
        request = PositionRequest(
            id=uuid.uuid4().hex, offsets=dict(offsets), requested_ms=_now_ms()
        )
        value = {
            "id": request.id,
            "offsets": [[t, p, o] for (t, p), o in sorted(offsets.items())],
            "updated_ms": request.requested_ms,
            "version": FORMAT_VERSION,
        }
        self._put(flow, "positions", value, timeout)
        return request

    def _put(self, flow: str, kind: str, value: dict, timeout: float) -> None:
        """Write the flow's one record of `kind` (the topic made first, if it is not there)."""
        self.ensure_topic(timeout)
        self._topic.write([(_key(flow, kind), json_record(value))], timeout=timeout)

    def wait_saved(
        self,
        flow: str,
        request_id: str,
        timeout: float,
        on_wait: Callable[[], None] | None = None,
    ) -> bool:
        """Wait until the flow's leader saved position request `request_id` (the request is
        gone, or replaced by a newer one); False at the deadline."""
        deadline = time.monotonic() + timeout
        while True:
            pending = self.read(flow, timeout).positions
            if pending is None or pending.id != request_id:
                return True
            if time.monotonic() >= deadline:
                return False
            if on_wait is not None:
                on_wait()
            time.sleep(_POLL_S)

    def positions_applied(self, flow: str, timeout: float = 30.0) -> None:
        """Delete the flow's position request (its offsets are the flow's progress now)."""
        self._topic.write([(_key(flow, "positions"), None)], timeout=timeout)

    def close(self) -> None:
        self._topic.close()


def _key(flow: str, kind: str) -> bytes:
    return json_record({"flow": flow, "kind": kind})


def _list_key(flow: str, name: ListName, entry: str) -> bytes:
    return json_record({"entry": entry, "flow": flow, "kind": "list", "list": name})


def _list_value(change: str | None) -> bytes | None:
    if change is None:
        return None
    return json_record({"change": change, "updated_ms": _now_ms(), "version": FORMAT_VERSION})


def _now_ms() -> int:
    return int(time.time() * 1000)
