"""`mirrorline driver`: run every enabled flow of a configuration on Spark."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import typer
from rich.console import Console

from mirrorline.cli import logs
from mirrorline.config import ConfigError, FlowConfig, load_config
from mirrorline.config.flow_settings import FlowSettings
from mirrorline.config.plugins import plugin_jars
from mirrorline.control.heartbeats import HeartbeatStatus, heartbeat_flows_for
from mirrorline.driver import (
    Driver,
    NoFlowsError,
    check_supported,
    select_flows,
)
from mirrorline.engine.spark_promise import SparkPromise
from mirrorline.engine.startup import SPARK_SESSION, driver_step
from mirrorline.engine.status import FlowStatus
from mirrorline.java_classes import JavaTopicFilter, shown_class
from mirrorline.jvm import JvmSetupError
from mirrorline.state_dirs import state_dir

out = Console()
err = Console(stderr=True)
_log = logging.getLogger("mirrorline.driver")


def _say(
    text: str, *, level: int = logging.INFO, stderr: bool = False, flow: str | None = None
) -> None:
    """A line for the operator: printed, or with `--log-format json` a log record."""
    if logs.is_json():
        _log.log(level, "%s", text, extra={"flow": flow})
    else:
        (err if stderr else out).print(text, highlight=False, soft_wrap=True)


def _fail(text: str, code: int, *, prefix: str = "error") -> typer.Exit:
    """Say what went wrong (on stderr, or as an ERROR record) and exit with `code`."""
    if logs.is_json():
        _log.error("%s: %s", prefix, text)
    else:
        err.print(f"[red]{prefix}:[/red] {text}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def default_work_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The driver's scratch space when `--work-dir` is not given, whatever the current directory
    (`state_dirs`: `$XDG_STATE_HOME/mirrorline/driver`, or `~/.local/state/mirrorline/driver`)."""
    return state_dir("driver", environ)


_WORK_DIR_HELP = (
    "Scratch space for Spark checkpoints (a cache: progress lives in the target cluster), "
    "created if missing. Default: $XDG_STATE_HOME/mirrorline/driver, or "
    f"~/.local/state/mirrorline/driver; here {default_work_dir()}."
)


def driver(
    config: Path = typer.Option(..., "--config", "-c", help="MM2-format properties file."),
    clusters: str = typer.Option(
        "", "--clusters", help="Only run flows whose target is one of these aliases (comma list)."
    ),
    master: str = typer.Option(
        "", "--master", help="Spark master URL (default: local[*] or $MIRRORLINE_SPARK_MASTER)."
    ),
    spark_conf: list[str] = typer.Option(
        [],
        "--spark-conf",
        metavar="KEY=VALUE",
        help="A Spark setting, like spark-submit's --conf (repeatable): "
        "--spark-conf spark.executor.memory=2g.",
    ),
    work_dir: Path | None = typer.Option(
        None, "--work-dir", help=_WORK_DIR_HELP, show_default=False
    ),
    status_every: float = typer.Option(
        10.0, "--status-every", min=0, help="Print each flow's status every N seconds (0: never)."
    ),
) -> None:
    """Replicate every enabled flow until Ctrl-C or SIGTERM (then stop between batches).

    Several drivers may run the same configuration: each flow is replicated by one
    of them, the others stand by and take over when it stops or dies.
    """
    if logs.is_json():
        logs.funnel_stderr()
    logs.configure(logging.INFO)
    try:
        spark_settings = parse_spark_conf(spark_conf)
    except typer.BadParameter as exc:
        raise _fail(str(exc), 2) from None
    try:
        loaded = load_config(config)
        targets = [c.strip() for c in clusters.split(",") if c.strip()] or None
        flows = select_flows(loaded, targets)
        heartbeat_flows = heartbeat_flows_for(loaded, targets)
        notes = check_supported(flows)
    except ConfigError as exc:
        raise _fail(str(exc), 2, prefix=str(config)) from None
    except NoFlowsError as exc:
        raise _fail(str(exc), 2) from None

    for flow in flows:
        _say(
            f"flow {flow.name}: topics {_topics_shown(flow)}; "
            f"policy {shown_class(flow.policy)}; remote names like {flow.remote_topic('<topic>')}",
            flow=flow.name,
        )

    for note in notes:
        _say(f"note: {note}", level=logging.WARNING, stderr=True)
    scratch = (work_dir or default_work_dir()).expanduser().resolve()
    try:
        scratch.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _fail(
            f"cannot create the work directory {scratch}: "
            f"{exc.strerror or exc} (choose another with --work-dir)",
            2,
        ) from None
    stop = threading.Event()

    def request_stop(signum, _frame) -> None:
        if stop.is_set():  # a second Ctrl-C: give up waiting
            raise KeyboardInterrupt
        _say(f"{signal.Signals(signum).name}: stopping flows between batches", stderr=True)
        stop.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    # The flows take over (leadership, progress, remote topics) while Spark starts:
    # they wait for the session only to start their queries (`engine.spark_promise`).
    promise = SparkPromise()
    mirror = Driver(flows, promise, scratch, heartbeat_flows)
    mirror.start(stop)
    try:
        from mirrorline.engine.session import added_to, build_spark_session

        user_jars = plugin_jars(flow.value("plugin.path") for flow in flows)
        if user_jars:
            spark_settings["spark.jars"] = added_to(
                spark_settings.get("spark.jars", "").split(","), ",".join(map(str, user_jars))
            )
        spark = build_spark_session(
            app_name="mirrorline driver",
            master=master or None,
            conf=spark_settings,
            log_level=logs.spark_level(),
            log_json=logs.is_json(),
            real_time=any(FlowSettings.of(flow).real_time_batch_ms is not None for flow in flows),
        )
    except BaseException as exc:
        promise.fail(str(exc))
        stop.set()
        mirror.join()
        if isinstance(exc, JvmSetupError):
            raise _fail(str(exc), 1) from None
        raise
    driver_step(SPARK_SESSION)
    promise.fulfil(spark)
    # PySpark installs its own SIGINT handler with the session (it cancels every job,
    # failing the running batch): Ctrl-C must stop between batches instead.
    signal.signal(signal.SIGINT, request_stop)
    try:
        mirror.run(stop, on_tick=_StatusPrinter(status_every, mirror.heartbeat_statuses))
    except KeyboardInterrupt:
        raise _fail("interrupted again: stopped without waiting for running batches", 130) from None
    finally:
        spark.stop()
    _say("driver stopped")


def parse_spark_conf(values: list[str]) -> dict[str, str]:
    """`--spark-conf KEY=VALUE` options as Spark settings; the last of a repeated key wins.

    Keys must start with `spark.`: Spark ignores other keys, so a typo such as
    `executor.memory=4g` would silently change nothing.
    """
    settings: dict[str, str] = {}
    for value in values:
        key, sep, setting = value.partition("=")
        key = key.strip()
        if not sep or not key:
            raise typer.BadParameter(
                f"--spark-conf {value!r}: expected KEY=VALUE, like spark.executor.memory=2g"
            )
        if not key.startswith("spark."):
            raise typer.BadParameter(
                f"--spark-conf {value!r}: {key!r} is no Spark setting (they start with 'spark.')"
            )
        settings[key] = setting.strip()
    return settings


class _StatusPrinter:
    """One line per flow every `every` seconds: state, volume, rate and reason;
    then one line on the heartbeats the driver emits."""

    def __init__(
        self, every: float, heartbeats: Callable[[], list[HeartbeatStatus]] = list
    ) -> None:
        self._every = every
        self._heartbeats = heartbeats
        self._next = time.monotonic() + every
        self._last_records: dict[str, tuple[float, int]] = {}

    def __call__(self, statuses: list[FlowStatus]) -> None:
        now = time.monotonic()
        if not self._every or now < self._next:
            return
        self._next = now + self._every
        for s in statuses:
            if s.state == "standby":  # another driver replicates it: nothing else to say
                _say(f"{s.flow}: standby — {s.reason}", flow=s.flow)
                self._last_records.pop(s.flow, None)
                continue
            mode = " (exactly once)" if s.exactly_once else ""
            then, before = self._last_records.get(s.flow, (now, s.records))
            rate = (s.records - before) / (now - then) if now > then else 0.0
            self._last_records[s.flow] = (now, s.records)
            age = f", record age {s.last_batch.max_age_ms} ms" if s.last_batch else ""
            reason = f" — {s.reason}" if s.reason else ""
            problems = f"; problems: {'; '.join(s.problems)}" if s.problems else ""
            _say(  # one line per flow, however narrow the output
                f"{s.flow}{mode}: {s.state}, {len(s.topics)} topics / {s.partitions} partitions, "
                f"{s.records} records ({rate:.0f}/s){age}{reason}{problems}{_losses(s)}"
                f"{_refusals(s)}{_checkpoints(s)}",
                flow=s.flow,
            )
        beats = self._heartbeats()
        if beats:
            _say(f"heartbeats: {', '.join(map(str, beats))}")


def _losses(status: FlowStatus) -> str:
    """Source records deleted before replication, with the latest gap's exact offsets."""
    lost = status.counters.get("records_lost", 0)
    if not lost:
        return ""
    gaps = status.counters.get("gaps", 0)
    latest = f", latest {status.gaps[-1]}" if status.gaps else ""
    return (
        f"; {lost} source records lost before replication in {gaps} "
        f"gap{'s' if gaps != 1 else ''}{latest}"
    )


def _refusals(status: FlowStatus) -> str:
    """Records the target refused and the flow skipped (errors.tolerance = all)."""
    refused = status.counters.get("records_refused", 0)
    if not refused:
        return ""
    dead = status.counters.get("records_dead_lettered", 0)
    latest = f", latest: {status.refusals[-1]}" if status.refusals else ""
    return f"; {refused} refused records skipped ({dead} dead-lettered){latest}"


def _checkpoints(status: FlowStatus) -> str:
    """Groups checkpointed, checkpoint latency and group offsets synced."""
    c = status.checkpoints
    if c is None or not c.groups:
        return ""
    latency = (
        f", latency p50 {c.latency_p50_ms:.0f} ms / p99 {c.latency_p99_ms:.0f} ms"
        if c.latency_p50_ms is not None
        else ""
    )
    synced = f", {c.group_offsets_synced} group offsets synced" if c.group_offsets_synced else ""
    pending = f", {c.untranslated} offsets not translatable yet" if c.untranslated else ""
    if c.translated_by_timestamp:
        pending += f", by timestamp: {', '.join(c.translated_by_timestamp)}"
    written = f"{c.groups} groups, {c.checkpoints_emitted} written"
    return f"; checkpoints: {written}{latency}{synced}{pending}"


def _topics_shown(flow: FlowConfig) -> str:
    filt = flow.topic_filter
    if isinstance(filt, JavaTopicFilter):
        return f"chosen by {filt.java.class_name}"
    excluding = f" excluding {', '.join(filt.exclude)}" if filt.exclude else ""
    return f"{', '.join(filt.include) or '(none)'}{excluding}"
