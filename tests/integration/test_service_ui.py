"""The web UI in a real browser: the page shows what the REST API says about a live flow.

Real clusters, a real driver (Spark local mode) and a real service; Debian's
Chromium, driven by Playwright, loads the page. The flow has aliases of its
own, so no other test's samples change its numbers. The page's numbers must
equal the API's: each is read from its `data-value` between two identical API
answers (the page refreshes every 5 s, so a mismatch can only be transient).
The flow's detail shows its last `mirrorline verify`. With
`MIRRORLINE_UI_SCREENSHOT=FILE` the page is also saved there as a full-page
PNG.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Browser, Page, expect
from typer.testing import CliRunner

from mirrorline.cli.main import app
from mirrorline.service.server import Service
from support.browser import chromium
from support.driving import running_driver
from support.kafka_io import Record, create_topic, produce, unique_name
from support.service import get, get_ok, own_aliases, running_service, write_aliased_config
from support.wait import wait_until

RECORDS = 3_000
PARTITIONS = 3
WINDOW = "1h"  # every record stays in it, so rates and latencies hold still
UI_TIMEOUT_MS = 20_000  # the page refreshes every 5 s


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


def _value(page: Page, selector: str) -> float | None:
    """A `data-value` as a number; None when the page shows no value."""
    text = page.locator(selector).get_attribute("data-value", timeout=UI_TIMEOUT_MS)
    return float(text) if text else None


def _agrees(page: Page, selector: str, api: Callable[[], float | None], what: str) -> float | None:
    """Wait until the page shows what the API says, both before and after reading the page."""

    def same() -> tuple[float | None] | None:
        before, shown, after = api(), _value(page, selector), api()
        return (shown,) if before == shown == after else None

    return wait_until(same, timeout=UI_TIMEOUT_MS / 1000, what=what, interval=0.5)[0]


def test_page_shows_the_running_flow_as_the_api_does(two_clusters, spark, tmp_path, browser):
    east, west = two_clusters
    src, dst = own_aliases("east", "west")
    flow = f"{src}->{dst}"
    topic = unique_name("orders")
    create_topic(east.bootstrap_servers, topic, partitions=PARTITIONS)
    produce(
        east.bootstrap_servers,
        topic,
        [Record(f"k{i}".encode(), b"v" * 100, partition=i % PARTITIONS) for i in range(RECORDS)],
    )
    config = write_aliased_config(
        tmp_path / "mm2.properties",
        {src: east, dst: west},
        f"{src}->{dst}.enabled = true\n{src}->{dst}.topics = {topic}\n",
    )
    with running_service(config) as service, running_driver(config, spark, tmp_path / "work"):
        api = _Api(service, src, dst)
        wait_until(
            lambda: api.topic_metric(topic, "record-count", "sum") == RECORDS,
            timeout=90,
            what=f"the API's record-count of {topic} to reach {RECORDS}",
            interval=0.5,
        )
        wait_until(
            lambda: api.flow()["state"] == "running",
            timeout=30,
            what=f"the API to report {flow} running",
        )
        # A verification of the copy: the service shows it as the flow's last one.
        verified = CliRunner().invoke(
            app, ["verify", "-c", str(config), "-s", src, "-t", dst, "--json"]
        )
        assert verified.exit_code == 0, verified.output
        wait_until(
            lambda: (api.flow()["last_verification"] or {}).get("checked") == RECORDS,
            timeout=90,
            what=f"the API to show {flow}'s last verification",
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            _check_page(page, service, api, flow, src, dst, topic)
        finally:
            page.close()


class _Api:
    """The REST API's answers about one flow, as the page reads them."""

    def __init__(self, service: Service, src: str, dst: str) -> None:
        self.base = service.url
        self.src, self.dst = src, dst

    def flow(self) -> dict:
        return get_ok(f"{self.base}/v2/replications/{self.src}/{self.dst}")

    def flow_metric(self, metric: str, stat: str) -> float | None:
        doc = get_ok(
            f"{self.base}/v2/cluster-metrics/{self.src}/{self.dst}/{metric}?window={WINDOW}"
        )
        return _shown(doc, stat)

    def topic_metric(self, topic: str, metric: str, stat: str) -> float | None:
        status, doc = get(
            f"{self.base}/v2/topic-metrics/{self.src}/{self.dst}/{topic}/{metric}?window={WINDOW}"
        )
        return _shown(doc, stat) if status == 200 else None


def _shown(doc: dict, stat: str) -> float | None:
    """What the page shows for a metric: lag is the total (`sum`) once there is one."""
    if doc["metric"] == "replication-records-lag":
        return None if doc["max"] is None else doc["sum"]
    return doc[stat]


def _check_page(
    page: Page, service: Service, api: _Api, flow: str, src: str, dst: str, topic: str
) -> None:
    page.set_default_timeout(UI_TIMEOUT_MS)
    expect.set_options(timeout=UI_TIMEOUT_MS)
    failures: list[str] = []
    page.on("pageerror", lambda exc: failures.append(str(exc)))
    page.goto(f"{service.url}/")  # redirects to ui/index.html
    expect(page).to_have_url(f"{service.url}/ui/index.html")

    row = page.locator(f'[data-testid="flow-row"][data-flow="{flow}"]')
    expect(row).to_have_count(1)
    expect(row.get_by_test_id("flow-state")).to_have_attribute("data-value", "running")
    expect(row.get_by_test_id("flow-state")).to_contain_text("running")
    expect(row).to_have_attribute("data-health", "healthy")

    # The graph: both clusters and the arrow between them, green.
    for alias in (src, dst):
        expect(page.locator(f'[data-testid="graph-node"][data-cluster="{alias}"]')).to_have_count(1)
    edge = page.locator(f'[data-testid="graph-edge"][data-flow="{flow}"]')
    expect(edge).to_have_count(1)
    expect(edge).to_have_attribute("data-health", "healthy")

    # Over a window holding every record, the flow's numbers are the API's.
    page.get_by_test_id("window-select").select_option(WINDOW)
    expect(page.locator("body")).to_have_attribute("data-window", WINDOW)
    cell = f'[data-testid="flow-row"][data-flow="{flow}"] [data-testid="%s"]'
    for testid, metric, stat in (
        ("flow-records-rate", "record-rate", "avg"),
        ("flow-bytes-rate", "byte-rate", "avg"),
        ("flow-latency", "replication-latency-ms", "avg"),
        ("flow-lag", "replication-records-lag", "sum"),
    ):
        _agrees(
            page,
            cell % testid,
            lambda metric=metric, stat=stat: api.flow_metric(metric, stat),
            what=f"the page's {testid} of {flow} to equal the API's {metric} {stat}",
        )
    rate = _value(page, cell % "flow-records-rate")
    assert rate == pytest.approx(RECORDS / 3600), "the records/s shown are not the window's mean"

    # Selecting the flow: its topic, and charts drawn from the points.
    row.click()
    detail = page.get_by_test_id("flow-detail")
    expect(detail).to_be_visible()
    expect(detail).to_have_attribute("data-flow", flow)
    verified = page.get_by_test_id("flow-verified")
    expect(verified).to_contain_text("last verified: ")
    expect(verified).to_contain_text(f"— identical ({RECORDS:,} records checked)")
    topic_row = page.locator(f'[data-testid="topic-row"][data-topic="{topic}"]')
    expect(topic_row.get_by_test_id("topic-remote")).to_have_text(f"{src}.{topic}")
    selector = f'[data-testid="topic-row"][data-topic="{topic}"] [data-testid="%s"]'
    for testid, metric, stat in (
        ("topic-records-rate", "record-rate", "avg"),
        ("topic-lag", "replication-records-lag", "sum"),
        ("topic-latency", "replication-latency-ms", "avg"),
    ):
        _agrees(
            page,
            selector % testid,
            lambda metric=metric, stat=stat: api.topic_metric(topic, metric, stat),
            what=f"the page's {testid} of {topic} to equal the API's {metric} {stat}",
        )
    for metric in ("record-rate", "replication-latency-ms", "replication-records-lag"):
        chart = page.locator(f'[data-testid="chart"][data-metric="{metric}"]')
        expect(chart).to_have_count(1)
        expect(chart.get_by_test_id("chart-line")).to_have_attribute("d", _DRAWN)
    assert int(page.get_by_test_id("chart").first.get_attribute("data-points") or 0) > 0

    expect(page.get_by_test_id("updated")).to_have_text(_UPDATED)
    expect(page.get_by_test_id("error-banner")).to_be_hidden()
    assert not failures, f"errors in the page's script: {failures}"

    screenshot = os.environ.get("MIRRORLINE_UI_SCREENSHOT")
    if screenshot:
        page.get_by_test_id("window-select").select_option("5m")
        expect(page.locator("body")).to_have_attribute("data-window", "5m")
        page.screenshot(path=screenshot, full_page=True)


_DRAWN = re.compile(r"^M[\d.]+,[\d.]+")  # a path with at least one point
_UPDATED = re.compile(r"^updated \d\d:\d\d:\d\d$")
