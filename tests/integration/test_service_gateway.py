"""Remote querying: a gateway service shows the replications of a second service that reports
another cluster, and keeps answering, marking it unreachable, once that service stops."""

from __future__ import annotations

from support.driving import running_driver
from support.kafka_io import Record, create_topic, produce, unique_name
from support.service import (
    get,
    get_ok,
    own_aliases,
    polled_sum,
    running_service,
    write_aliased_config,
)
from support.wait import wait_until

RECORDS = 1_500


def test_gateway_serves_a_remote_service_and_survives_its_stop(three_clusters, spark, tmp_path):
    east, west, central = three_clusters
    src, near, far = own_aliases("src", "near", "far")
    topic = unique_name("orders")
    create_topic(east.bootstrap_servers, topic, partitions=2)
    produce(east.bootstrap_servers, topic, [Record(None, b"v" * 100) for _ in range(RECORDS)])
    clusters = {src: east, near: west, far: central}
    flows = (
        f"{src}->{near}.enabled = true\n{src}->{near}.topics = {topic}\n"
        f"{src}->{far}.enabled = true\n{src}->{far}.topics = {topic}\n"
    )
    driver_config = write_aliased_config(tmp_path / "driver.properties", clusters, flows)
    gateway_config = write_aliased_config(
        tmp_path / "gateway.properties",
        clusters,
        flows + f"service.clusters = {near}\nservice.remote.clusters = {far}\n",
    )
    remote_config = write_aliased_config(
        tmp_path / "remote.properties", clusters, flows + f"service.clusters = {far}\n"
    )
    with (
        running_driver(driver_config, spark, tmp_path / "work"),
        running_service(gateway_config) as gateway,
    ):
        with running_service(remote_config) as remote:

            def both_running():
                doc = get_ok(f"{gateway.url}/v2/replications")
                found = {(r["source"], r["target"]): r for r in doc["replications"]}
                wanted = [found.get((src, near)), found.get((src, far))]
                if all(r is not None and r["state"] == "running" for r in wanted):
                    return doc, wanted
                return None

            doc, (local, served) = wait_until(
                both_running, timeout=120, what="the gateway to list both flows running"
            )
            assert local["served_by"] == gateway.remote.own.id
            assert served["served_by"] == remote.remote.own.id and not served["unreachable"]
            services = {s["id"]: s for s in doc["services"]}
            assert services[remote.remote.own.id]["reachable"] is True
            assert services[remote.remote.own.id]["targets"] == [far]

            # Metrics of the remote flow are fetched from the service that reports it.
            far_count = f"{gateway.url}/v2/cluster-metrics/{src}/{far}/record-count?window=15m"
            wait_until(
                lambda: polled_sum(far_count) == RECORDS,
                timeout=120,
                what="the remote flow's record-count through the gateway",
            )
            status, missing = get(f"{gateway.url}/v2/topic-metrics/{src}/{far}/nope/record-count")
            assert status == 404 and topic in missing["known"], missing

        # The remote service stopped: the gateway still answers, and says so.
        doc = get_ok(f"{gateway.url}/v2/replications")
        services = {s["id"]: s for s in doc["services"]}
        assert services[remote.remote.own.id]["reachable"] is False
        assert services[remote.remote.own.id]["error"]
        found = {(r["source"], r["target"]): r for r in doc["replications"]}
        assert found[(src, near)]["state"] == "running"
        assert found[(src, far)]["unreachable"] is True
        assert remote.remote.own.id in found[(src, far)]["reason"]
        status, error = get(far_count)
        assert status == 503 and "did not answer" in error["error"], error
