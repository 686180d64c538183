"""Session-wide fixtures: real Kafka clusters and one Spark session.

Clusters start lazily, once per test session, in a temporary directory, and are
tied to this process (killed by the kernel if pytest dies), so a failed or
interrupted run leaves no JVM behind.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from mirrorline.devbroker import JVM_ENV
from mirrorline.devcluster import DevCluster, DevClusters
from mirrorline.policy import DefaultReplicationPolicy
from mirrorline.process import tail
from support.kafka_io import delete_topics, topic_names
from support.scheduling import ByModule

# The suite starts and restarts dozens of nodes on two cores; what it tests does not
# depend on the brokers' peak throughput (benchmarks use the standard JVM).
os.environ.setdefault(JVM_ENV, "light")

ALIASES = ("east", "west", "central")

pytest_plugins = ["support.fatal_report"]


class ClusterPool:
    """Starts up to three dev clusters, only as many as the tests ask for."""

    def __init__(self, directory: Path) -> None:
        self.dev = DevClusters(directory)

    def first(self, count: int) -> list[DevCluster]:
        running = {c.alias for c in self.dev.clusters()}
        missing = [a for a in ALIASES[:count] if a not in running]
        if missing:
            self.dev.up(missing, die_with_parent=True)
        by_alias = {c.alias: c for c in self.dev.clusters()}
        return [by_alias[a] for a in ALIASES[:count]]

    def wait_serving(self, timeout: float = 180.0) -> None:
        """Wait until every node of every running cluster is a registered, unfenced broker.

        Two pytest processes share two cores with dozens of JVMs; a node starved long
        enough misses its heartbeats and is fenced until it has caught up, and a test
        that started meanwhile would fail on its first request for no fault of its own.
        A node that does not serve in time fails the test's set-up, whose report then
        ends with the shared nodes' logs (`pytest_runtest_makereport`).
        """
        for cluster in self.dev.clusters():
            self.dev.wait_serving(cluster.alias, timeout)

    def logs_tail(self, lines: int = 20) -> str:
        """The last lines of every shared node's server log, for a failure's report."""
        return "\n".join(
            f"--- {cluster.alias} node {node.id}: {node.server_log}\n{tail(node.server_log, lines)}"
            for cluster in self.dev.clusters()
            for node in cluster.nodes
        )

    def remove_heartbeats_topics(self) -> None:
        policy = DefaultReplicationPolicy()
        for cluster in self.dev.clusters():
            bootstrap = cluster.bootstrap_servers
            delete_topics(bootstrap, filter(policy.is_heartbeats_topic, topic_names(bootstrap)))


POOL = pytest.StashKey["ClusterPool"]()


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> ByModule:
    """`make test` runs the suite in two processes (pytest-xdist), each with clusters
    and a Spark session of its own, split as `support.scheduling` says."""
    return ByModule(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def _mirrorline_log_level():
    """Give the next test the `mirrorline` logger's level as this one found it: commands
    run in-process (`failover` quiets it to errors) must not hide later tests' logs."""
    logger = logging.getLogger("mirrorline")
    level = logger.level
    yield
    logger.setLevel(level)


@pytest.fixture(scope="session")
def cluster_pool(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    pool = ClusterPool(tmp_path_factory.mktemp("clusters"))
    request.config.stash[POOL] = pool
    yield pool
    pool.dev.down()


def _shared_pool(item: pytest.Item) -> ClusterPool | None:
    """The session's shared clusters, if `item` (a test) uses them."""
    pool = item.config.stash.get(POOL, None)
    return pool if "cluster_pool" in getattr(item, "fixturenames", ()) else None


@pytest.fixture(autouse=True)
def _shared_clusters_serving(request: pytest.FixtureRequest):
    """Start each test that uses the shared clusters on clusters that serve it."""
    pool = _shared_pool(request.node)
    if pool is not None:
        pool.wait_serving()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failed test that used the shared clusters reports how their nodes' logs end."""
    report = yield
    pool = _shared_pool(item)
    if report.failed and pool is not None:
        report.sections.append(("shared clusters' server logs", pool.logs_tail()))
    return report


@pytest.fixture(scope="module", autouse=True)
def _no_heartbeats_left_on_shared_clusters(request: pytest.FixtureRequest):
    """Leave the session's clusters without heartbeats topics when a test module ends.

    Every flow replicates a source's heartbeats topics whatever its topic filter says,
    so one that a module leaves behind (MM2 emits them, some tests write them) would
    change what every later module's flows copy. Torn down after the module's own
    fixtures, so nothing of the module still emits.
    """
    yield
    pool = request.config.stash.get(POOL, None)
    if pool is not None and any(
        getattr(item, "module", None) is request.module and "cluster_pool" in item.fixturenames
        for item in request.session.items
    ):
        pool.remove_heartbeats_topics()


@pytest.fixture(scope="session")
def two_clusters(cluster_pool: ClusterPool) -> tuple[DevCluster, DevCluster]:
    east, west = cluster_pool.first(2)
    return east, west


@pytest.fixture(scope="session")
def three_clusters(cluster_pool: ClusterPool) -> tuple[DevCluster, DevCluster, DevCluster]:
    east, west, central = cluster_pool.first(3)
    return east, west, central


@pytest.fixture(scope="session")
def secured_clusters(tmp_path_factory: pytest.TempPathFactory):
    """Two clusters (east, west) with SASL_SSL only and the authorizer on (see `devsecurity`).

    The replication user has no ACL until a test grants it some.
    """
    dev = DevClusters(tmp_path_factory.mktemp("secured"))
    dev.up(("east", "west"), die_with_parent=True, security="sasl_ssl")
    yield dev
    dev.down()


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    from mirrorline.engine.session import build_spark_session

    session = build_spark_session(
        app_name="mirrorline-tests",
        master="local[2]",
        conf={
            "spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("warehouse")),
        },
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def plugin_jar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A jar of example Java plugins for MM2 files (`support/java_plugins.py`)."""
    from support.java_plugins import build_plugin_jar

    return build_plugin_jar(tmp_path_factory.mktemp("plugins"))
