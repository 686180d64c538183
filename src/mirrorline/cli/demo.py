"""`mirrorline demo`: two local clusters replicating both ways, live, until Ctrl-C.

Starts two dev clusters (east, west), writes a configuration enabling east->west
and west->east, runs `mirrorline driver` and `mirrorline service` on it (the web
UI's address is printed), produces a steady stream into `orders` on east and
`payments` on west, and shows each topic and its remote copy filling up. Ctrl-C
(or `--duration`) stops the traffic, then the service, the driver between
batches, and the clusters.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import typer
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from rich.console import Console
from rich.live import Live
from rich.table import Table

from mirrorline.admin_client import AdminClient
from mirrorline.devcluster import DevCluster, DevClusterError, DevClusters
from mirrorline.jvm import JvmSetupError
from mirrorline.kafka import ensure_topic
from mirrorline.process import dying_with_parent, free_port

PARTITIONS = 3
out = Console()
err = Console(stderr=True)


@dataclass(frozen=True)
class _Stream:
    """Demo traffic: a topic on one cluster and its remote copy on the other."""

    source: DevCluster
    target: DevCluster
    topic: str

    @property
    def remote(self) -> str:
        return f"{self.source.alias}.{self.topic}"


def demo(
    directory: Path = typer.Option(
        Path(".mirrorline/demo"), "--dir", help="Directory for the demo's clusters, config, logs."
    ),
    rate: int = typer.Option(200, "--rate", min=1, help="Records per second into each topic."),
    duration: float = typer.Option(
        0, "--duration", min=0, help="Stop after this many seconds (0: run until Ctrl-C)."
    ),
    port: int = typer.Option(
        6670, "--port", min=1, max=65535, help="The service's port (another if it is taken)."
    ),
) -> None:
    """Replicate live traffic between two local clusters, both ways (Ctrl-C to stop)."""
    dev = DevClusters(directory)
    say = lambda msg: err.print(f"[dim]{msg}[/dim]")  # noqa: E731
    try:
        dev.down()  # leftovers of an earlier demo that was killed
        east, west = dev.up(["east", "west"], die_with_parent=True, progress=say)
    except (DevClusterError, JvmSetupError) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None

    streams = [_Stream(east, west, "orders"), _Stream(west, east, "payments")]
    stop = threading.Event()
    producers = [threading.Thread(target=_produce, args=(s, rate, stop)) for s in streams]
    # A consumer group reads each topic: its checkpoints show in the service and the UI.
    producers += [threading.Thread(target=_consume, args=(s, stop)) for s in streams]
    driver = service = None
    try:
        for stream in streams:
            admin = AdminClient({"bootstrap.servers": stream.source.bootstrap_servers})
            ensure_topic(admin, stream.topic, partitions=PARTITIONS, replication_factor=1)
        config = _write_config(dev, directory)
        out.print(f"clusters: east {east.bootstrap_servers}, west {west.bootstrap_servers}")
        out.print(f"configuration: {config}; driver log: {directory / 'driver.log'}")
        driver = _start("driver", config, directory, "--work-dir", str(directory / "driver"))
        port = port if _port_free(port) else free_port()
        service = _start("service", config, directory, "--port", str(port))
        out.print(
            f"web UI: http://127.0.0.1:{port}/  (REST API docs /docs, Prometheus /metrics); "
            f"service log: {directory / 'service.log'}"
        )
        for thread in producers:
            thread.start()
        out.print(f"producing {rate} records/s into east/orders and west/payments; Ctrl-C to stop")
        _show(streams, driver, duration)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        say("stopping traffic, driver and clusters")
        for thread in producers:
            if thread.is_alive():
                thread.join(10)
        for child in (service, driver):
            if child is not None:
                _stop(child)
        dev.down(progress=say)
    out.print("demo stopped")


def _write_config(dev: DevClusters, directory: Path) -> Path:
    config = directory / "mirrorline.properties"
    config.write_text(
        dev.properties_file.read_text()
        + "\n# Replicate both ways; remote topics are prefixed with their source alias.\n"
        "east->west.enabled = true\n"
        "west->east.enabled = true\n"
        "refresh.topics.interval.seconds = 5\n"
        "refresh.groups.interval.seconds = 10\n"
        "emit.checkpoints.interval.seconds = 10\n"
    )
    return config


def _start(role: str, config: Path, directory: Path, *options: str) -> subprocess.Popen[bytes]:
    """`mirrorline driver` or `mirrorline service` on `config`, its output in `<role>.log`."""
    log = open(directory / f"{role}.log", "wb")  # noqa: SIM115 - handed to the child
    command = [sys.executable, "-m", "mirrorline", role, "--config", str(config), *options]
    try:
        return subprocess.Popen(
            # If the demo is killed, its children go too (a driver's Spark JVM follows it).
            dying_with_parent(command),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Own session: Ctrl-C reaches the demo, which stops its children in order.
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    finally:
        log.close()


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(10)


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _produce(stream: _Stream, rate: int, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": stream.source.bootstrap_servers, "linger.ms": 20})
    sent = 0
    started = time.monotonic()
    while not stop.is_set():
        # Keep to the requested rate on average without busy-waiting.
        due = int((time.monotonic() - started) * rate)
        for _ in range(due - sent):
            producer.produce(
                stream.topic,
                key=f"customer-{sent % 50}".encode(),
                value=f'{{"{stream.topic}": {sent}}}'.encode(),
                headers=[("origin", stream.source.alias.encode())],
            )
            sent += 1
        producer.poll(0.05)
    producer.flush(10)


def _consume(stream: _Stream, stop: threading.Event) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": stream.source.bootstrap_servers,
            "group.id": f"{stream.topic}-readers",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([stream.topic])
    try:
        while not stop.is_set():
            consumer.consume(500, timeout=0.5)
    finally:
        consumer.close()


class _Counter:
    """Record counts of topics, from end offsets (no consumer group, nothing committed)."""

    def __init__(self) -> None:
        self._consumers: dict[str, Consumer] = {}

    def count(self, cluster: DevCluster, topic: str) -> int | None:
        consumer = self._consumers.get(cluster.alias)
        if consumer is None:
            consumer = self._consumers[cluster.alias] = Consumer(
                {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "mirrorline-demo"}
            )
        try:
            meta = consumer.list_topics(topic, timeout=5).topics.get(topic)
            if meta is None or meta.error is not None:
                return None
            return sum(
                consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1]
                for p in meta.partitions
            )
        except KafkaException:
            # A topic just created, or a leader moving: shown as unknown until the next look.
            return None


def _show(streams: list[_Stream], driver: subprocess.Popen[bytes], duration: float) -> None:
    end = time.monotonic() + duration if duration else float("inf")
    counter = _Counter()
    live = Live(console=out, refresh_per_second=2) if out.is_terminal else None
    if live is not None:
        live.start()
    try:
        while time.monotonic() < end:
            if driver.poll() is not None:
                err.print(
                    f"[red]error:[/red] the driver exited with code {driver.returncode}; "
                    "see driver.log"
                )
                raise typer.Exit(1)
            rows = [
                (s, counter.count(s.source, s.topic), counter.count(s.target, s.remote))
                for s in streams
            ]
            if live is not None:
                live.update(_table(rows))
            else:
                # Plain lines for logs and pipes.
                out.print(
                    "; ".join(
                        f"{s.source.alias}/{s.topic} {n or 0} -> "
                        f"{s.target.alias}/{s.remote} {r if r is not None else 'not yet created'}"
                        for s, n, r in rows
                    ),
                    soft_wrap=True,  # one line per update, however narrow the output
                )
            time.sleep(1)
    finally:
        if live is not None:
            live.stop()


def _table(rows) -> Table:
    table = Table(title="Mirrorline demo: east <-> west")
    for column in ("flow", "source topic", "records", "remote topic", "replicated", "behind"):
        table.add_column(
            column, justify="right" if column in ("records", "replicated", "behind") else "left"
        )
    for stream, produced, replicated in rows:
        table.add_row(
            f"{stream.source.alias}->{stream.target.alias}",
            f"{stream.source.alias}/{stream.topic}",
            str(produced or 0),
            f"{stream.target.alias}/{stream.remote}",
            "creating" if replicated is None else str(replicated),
            "-" if replicated is None else str(max(0, (produced or 0) - replicated)),
        )
    return table
