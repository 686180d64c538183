"""The driver's Spark session, promised to the flows before it exists.

Starting Spark (its JVM and context) takes seconds, and so does a flow's
take-over: its leadership (a group on the target cluster), its progress and
translation store read back, its remote topics created. The take-over needs no
Spark, so `mirrorline driver` starts the flows first and builds the session
beside them: a flow asks for the session only when it starts its query
(`DataPath.start`) and waits there until the session exists. Time to the first
copied record is then the longer of the two, not their sum.

A session that cannot be built (`fail`) ends every wait with `SparkUnavailable`;
the driver stops its flows and reports why.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SparkUnavailable(RuntimeError):
    """The driver's Spark session could not be started."""


class SparkPromise:
    """A Spark session that may still be starting; `get` waits for it."""

    def __init__(self, session: SparkSession | None = None) -> None:
        self._ready = threading.Event()
        self._session = session
        self._failure: str | None = None
        if session is not None:
            self._ready.set()

    def fulfil(self, session: SparkSession) -> None:
        self._session = session
        self._ready.set()

    def fail(self, reason: str) -> None:
        self._failure = reason
        self._ready.set()

    def get(self) -> SparkSession:
        """The session, once built; raises `SparkUnavailable` when it cannot be."""
        self._ready.wait()
        if self._session is None:
            raise SparkUnavailable(f"Spark could not be started: {self._failure}")
        return self._session
