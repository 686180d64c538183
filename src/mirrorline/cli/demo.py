"""`mirrorline demo`: local clusters with live traffic, stopped cleanly by Ctrl-C.

Starts two dev clusters (east, west), creates a topic on east, produces a steady
stream of keyed records with headers into it and shows them arriving at a reader,
per partition, until interrupted or `--duration` passes. Everything it started is
stopped on the way out.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import typer
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from rich.console import Console
from rich.live import Live
from rich.table import Table

from mirrorline.devcluster import DevClusterError, DevClusters
from mirrorline.jvm import JvmSetupError

TOPIC = "orders"
PARTITIONS = 3
out = Console()
err = Console(stderr=True)


@dataclass
class _Counts:
    produced: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    arrived: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    last_offset: dict[int, int] = field(default_factory=dict)
    latency_ms: dict[int, int] = field(default_factory=dict)
    errors: int = 0


def demo(
    directory: Path = typer.Option(
        Path(".mirrorline/demo"), "--dir", help="Directory for the demo clusters' data and logs."
    ),
    rate: int = typer.Option(200, "--rate", min=1, help="Records per second to produce."),
    duration: float = typer.Option(
        0, "--duration", min=0, help="Stop after this many seconds (0: run until Ctrl-C)."
    ),
) -> None:
    """Start two local clusters and show live traffic arriving (Ctrl-C to stop)."""
    dev = DevClusters(directory)
    try:
        dev.down()  # leftovers of an earlier demo that was killed
        east, west = dev.up(
            ["east", "west"],
            die_with_parent=True,
            progress=lambda msg: err.print(f"[dim]{msg}[/dim]"),
        )
    except (DevClusterError, JvmSetupError) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None

    out.print(f"clusters: east {east.bootstrap_servers}, west {west.bootstrap_servers}")
    out.print(f"properties file: {dev.properties_file}")
    stop = threading.Event()
    counts = _Counts()
    threads = [
        threading.Thread(target=_produce, args=(east.bootstrap_servers, rate, stop, counts)),
        threading.Thread(target=_read, args=(east.bootstrap_servers, stop, counts)),
    ]
    try:
        _create_topic(east.bootstrap_servers)
        for thread in threads:
            thread.start()
        out.print(f"producing {rate} records/s into east/{TOPIC}; Ctrl-C to stop")
        _show(counts, duration)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        err.print("[dim]stopping traffic and clusters[/dim]")
        for thread in threads:
            if thread.is_alive():
                thread.join(10)
        dev.down(progress=lambda msg: err.print(f"[dim]{msg}[/dim]"))
    total = sum(counts.arrived.values())
    out.print(f"stopped: {sum(counts.produced.values())} produced, {total} arrived")


def _create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)


def _produce(bootstrap: str, rate: int, stop: threading.Event, counts: _Counts) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})

    def delivered(error, msg):
        if error is None:
            counts.produced[msg.partition()] += 1
        else:
            counts.errors += 1

    sent = 0
    started = time.monotonic()
    while not stop.is_set():
        # Keep to the requested rate on average without busy-waiting.
        due = int((time.monotonic() - started) * rate)
        for _ in range(due - sent):
            value = json.dumps({"order": sent, "amount": sent % 97 + 1}).encode()
            producer.produce(
                TOPIC,
                key=f"customer-{sent % 50}".encode(),
                value=value,
                headers=[("origin", b"mirrorline-demo")],
                on_delivery=delivered,
            )
            sent += 1
        producer.poll(0.05)
    producer.flush(10)


def _read(bootstrap: str, stop: threading.Event, counts: _Counts) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mirrorline-demo",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([TOPIC])
    try:
        while not stop.is_set():
            for msg in consumer.consume(500, timeout=0.2):
                if msg.error():
                    continue
                partition = msg.partition()
                counts.arrived[partition] += 1
                counts.last_offset[partition] = msg.offset()
                counts.latency_ms[partition] = int(time.time() * 1000) - msg.timestamp()[1]
    finally:
        consumer.close()


def _show(counts: _Counts, duration: float) -> None:
    end = time.monotonic() + duration if duration else float("inf")
    if out.is_terminal:
        with Live(_table(counts), console=out, refresh_per_second=4) as live:
            while time.monotonic() < end:
                time.sleep(0.25)
                live.update(_table(counts))
    else:
        # Plain lines for logs and pipes: one summary per second.
        while time.monotonic() < end:
            time.sleep(1)
            out.print(
                f"east/{TOPIC}: produced {sum(counts.produced.values())}, "
                f"arrived {sum(counts.arrived.values())}"
            )


def _table(counts: _Counts) -> Table:
    table = Table(title=f"east/{TOPIC}")
    for column in ("partition", "produced", "arrived", "last offset", "latency ms"):
        table.add_column(column, justify="right")
    for partition in range(PARTITIONS):
        table.add_row(
            str(partition),
            str(counts.produced[partition]),
            str(counts.arrived[partition]),
            str(counts.last_offset.get(partition, "-")),
            str(counts.latency_ms.get(partition, "-")),
        )
    return table
