"""What librdkafka says about a failure, in its own words: the connection reports a
client's `error_cb` receives, and the error an exception carries."""

from __future__ import annotations

import threading

from confluent_kafka import KafkaError, KafkaException


class ClientErrors:
    """librdkafka's latest complaint about a cluster's connections, kept as it comes
    through a client's `error_cb` (this object is that callback).

    librdkafka reports a connection error once, not at each retry, and says more in
    it (the broker, authentication, TLS, a refused connection) than a failed
    request does ("transport failure", a timeout): the latest report is kept until
    `clear`. One that names a cause is kept over "all brokers are down", which only
    sums up the reports before it.

    A client is given this object as its callback, never a method of the object
    that owns the client: that would make a reference cycle (owner, client,
    callback, owner), and the client would go only when the cycle collector found
    it, not when its owner is dropped (see `admin_client` for why an admin client
    must not be left to the collector, and what stops that from crashing).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        with self._lock:
            if error.code() == KafkaError._ALL_BROKERS_DOWN and self._last is not None:
                return
            self._last = error

    @property
    def last(self) -> KafkaError | None:
        with self._lock:
            return self._last

    def text(self) -> str:
        """The latest report's text; empty when there is none."""
        last = self.last
        return last.str() if last is not None else ""

    def clear(self) -> None:
        with self._lock:
            self._last = None


def error_text(error: BaseException) -> str:
    """librdkafka's own words for `error` when it carries a `KafkaError`, else its message."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        return str(error.args[0].str())
    return str(error) or type(error).__name__
