"""librdkafka's connection reports as a client's `error_cb` (`client_errors.ClientErrors`), and
the owners of admin clients that must not form a reference cycle with them."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import KafkaError

from mirrorline.client import MirrorClient
from mirrorline.client_errors import ClientErrors
from mirrorline.cluster_access import ClusterAccess
from mirrorline.engine.health import ClusterProbe
from mirrorline.kafka import KafkaOperationError

NOBODY = {"bootstrap.servers": "127.0.0.1:1"}  # nobody listens there: every attempt is refused


def test_a_cause_is_kept_over_the_summary_that_follows_it() -> None:
    errors = ClientErrors()
    assert errors.last is None and errors.text() == ""
    errors(KafkaError(KafkaError._TRANSPORT, "127.0.0.1:1/bootstrap: Connection refused"))
    errors(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    assert errors.text() == "127.0.0.1:1/bootstrap: Connection refused"
    errors.clear()
    errors(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    assert errors.text() == "1/1 brokers are down"
    errors(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error"))
    assert errors.last is not None and errors.last.code() == KafkaError._AUTHENTICATION


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _probe() -> object:
    return ClusterProbe("east", "source", NOBODY, "t")


def _cluster_access() -> object:
    access = ClusterAccess("east", admin=NOBODY, consumer=NOBODY, timeout=1)
    assert access.admin is not None  # made on first use
    return access


def _mirror_client() -> object:
    client = MirrorClient(NOBODY, cluster="east", timeout=0.5)
    with pytest.raises(KafkaOperationError, match="does not answer"):
        client.heartbeat_topics()  # makes its admin client, which finds nobody
    return client


OWNERS: dict[str, Callable[[], object]] = {
    "probe": _probe,
    "cluster access": _cluster_access,
    "client": _mirror_client,
}


@pytest.mark.parametrize("kind", sorted(OWNERS))
def test_an_owner_of_an_admin_client_goes_as_soon_as_it_is_dropped(
    kind: str, no_cycle_collector: None
) -> None:
    # With the cycle collector off, only reference counts free objects: an owner
    # in a cycle with its client would outlive `del` and be left to the collector,
    # which may run on the client's own thread (where librdkafka aborts).
    owner = OWNERS[kind]()
    gone = weakref.ref(owner)
    del owner
    assert gone() is None
