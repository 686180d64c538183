"""A flow's view of its control records, followed as operators write them.

Every driver of a flow, leader or not, reads the control topic on the flow's
target (`control.flow_control`) from its start and then keeps polling it, so a
`topics --add`, `pause` or `positions set` reaches the flow within a poll
(`POLL_S`) of being acknowledged. The flow acts only on a view that has read
the whole topic once (`ready()`): a driver that restarts does not run a
stopped flow for the moment it takes to read that the flow is stopped.

A cluster that does not answer leaves the last view in place; the watcher
retries on its own thread and never blocks the flow's, nor its stop: the
thread only reads, so `close` gives it a poll's time to close its consumer and
leaves it (a daemon) when a request to a silent target holds it longer.
"""

from __future__ import annotations

import logging
import threading

from confluent_kafka import Consumer, TopicPartition

from mirrorline.control.control_store import ControlStore
from mirrorline.control.flow_control import CONTROL_TOPIC, ControlFold, FlowControl
from mirrorline.flow_context import FlowContext

log = logging.getLogger(__name__)

POLL_S = 0.5
_RETRY_S = 2.0
_CLOSE_S = 4 * POLL_S


class ControlWatch:
    """Follows one flow's control records on its target (see the module)."""

    def __init__(self, context: FlowContext, store: ControlStore) -> None:
        """`store`: the flow's control records on its target (it creates their topic)."""
        self._context = context
        self._store = store
        self._fold = ControlFold()
        self._lock = threading.Lock()
        self._view = FlowControl(context.name)
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: str | None = None
        self._next = 0  # the next offset of the control topic to read

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"control {self._context.name}", daemon=True
            )
            self._thread.start()

    def ready(self) -> bool:
        """True once the whole topic was read at least once."""
        return self._ready.is_set()

    def current(self) -> FlowControl:
        with self._lock:
            return self._view

    def error(self) -> str | None:
        """Why the view may be out of date (the target did not answer), or None."""
        with self._lock:
            return self._error

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=_CLOSE_S)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._follow()
            except Exception as exc:  # noqa: BLE001 - kept for the status, retried
                with self._lock:
                    self._error = f"reading {CONTROL_TOPIC}: {exc}"
                log.warning("flow %s: %s", self._context.name, self._error)
                self._stop.wait(_RETRY_S)

    def _follow(self) -> None:
        target = self._context.target
        self._store.ensure_topic(timeout=10.0)
        consumer = Consumer(
            {
                **target.consumer_settings,
                "group.id": f"mirrorline-reader-{CONTROL_TOPIC}",
                "enable.auto.commit": False,
            }
        )
        try:
            tp = TopicPartition(CONTROL_TOPIC, 0)
            consumer.assign([TopicPartition(CONTROL_TOPIC, 0, self._next)])
            while not self._stop.is_set():
                changed = False
                for msg in consumer.consume(1000, timeout=POLL_S):
                    error = msg.error()
                    if error is not None:
                        raise RuntimeError(error.str())
                    self._fold.add(msg)
                    self._next = (msg.offset() or 0) + 1
                    changed = True
                if changed:
                    self._publish()
                if not self._ready.is_set():
                    _, end = consumer.get_watermark_offsets(tp, timeout=10.0, cached=False)
                    # Compaction leaves offsets without records: the position passes them.
                    if consumer.position([tp])[0].offset >= end or self._next >= end:
                        self._publish()
                        self._ready.set()
                        self._context.wake.set()
        finally:
            consumer.close()

    def _publish(self) -> None:
        view = self._fold.flow(self._context.name)
        with self._lock:
            self._view = view
            self._error = None
