"""The admin client every part of Mirrorline uses: confluent-kafka's, made safe to drop.

An admin client delivers its request results on a thread of its own, and Python
code runs there (the results' futures, their callbacks, `error_cb`); any
allocation there may start the cycle collector. librdkafka aborts the whole
process when a client is destroyed on one of its own threads, so a client left
in a reference cycle (an owner that keeps an exception with its traceback, a
thread, a callback of its own) could take the process down when the collector
happened to run on that very thread.

So an owner closes its client (`close`, or `destroy` for one that may be None),
in its own thread, once no other thread uses it. A client that is dropped
without that, however it is dropped, is handed to one reaper thread of
Mirrorline's, which destroys it there: `__del__` keeps the object alive
(Python calls it once, before freeing) by queueing it. At interpreter exit the
collector runs on the main thread, where freeing is safe, and the reaper no
longer runs, so nothing is queued then.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Mapping
from typing import Any

from confluent_kafka.admin import AdminClient as _ConfluentAdminClient

_dropped: queue.SimpleQueue[AdminClient] = queue.SimpleQueue()
_reaper_lock = threading.Lock()
_reaper: threading.Thread | None = None


def _reap() -> None:
    while True:
        client = _dropped.get()
        client.__exit__(None, None, None)
        del client


def _start_reaper() -> None:
    """Started by the first client's constructor: never from `__del__`, which may run
    in the middle of anything, on a librdkafka thread."""
    global _reaper
    with _reaper_lock:
        if _reaper is None:
            _reaper = threading.Thread(target=_reap, name="mirrorline-admin-reaper", daemon=True)
            _reaper.start()


class AdminClient(_ConfluentAdminClient):
    """confluent-kafka's `AdminClient`, never destroyed on one of its own threads."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        _start_reaper()
        self._closed = True  # until librdkafka has made the client
        super().__init__(dict(config))
        self._closed = False

    def close(self) -> None:
        """Destroy the client now, in this thread; later requests raise. Idempotent."""
        if not self._closed:
            self._closed = True
            self.__exit__(None, None, None)

    def __del__(self) -> None:
        if getattr(self, "_closed", True) or sys.is_finalizing():
            return
        self._closed = True
        _dropped.put(self)


def destroy(admin: AdminClient | None) -> None:
    """Close `admin` unless there is none (an owner whose client was never made)."""
    if admin is not None:
        admin.close()
