"""Reading each flow's run-time changes for `config check` and `status`, bounded in time.

With `first_start` (`config check`), also what a flow's next start does about
a MirrorMaker 2 that copied its partitions before (`predecessor.handover.preview`),
and how far its source is (`operations.source_link`).

The changes live in the control topic on each flow's target cluster
(`control.flow_control`), read with the flow's own target settings, as its
driver reads them. Both commands must answer quickly and `config check` must
succeed for a valid file even when clusters are down, so every flow is read
at once, in its own thread, with a short timeout; a flow whose target does
not answer in time gets a note instead of its changes.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import re
import threading
import time
from collections.abc import Sequence

from mirrorline.cli.config_summary import Runtime
from mirrorline.client_errors import error_text
from mirrorline.config import ConfigError
from mirrorline.config.model import FlowConfig, Side
from mirrorline.control.control_store import ControlStore
from mirrorline.flow_context import side_clients
from mirrorline.operations.positions import saved_progress
from mirrorline.operations.source_link import SourceLink, advise, measure
from mirrorline.predecessor.handover import preview

log = logging.getLogger(__name__)

#: How long `config check` waits for a target cluster by default.
READ_TIMEOUT_S = 5.0
#: How long, after the answer, an exiting command lets late reads close their clients.
CLOSE_GRACE_S = 10.0

# librdkafka's words for a cluster that cannot be reached (as opposed to one that refuses).
_NO_ANSWER = (
    "timed out",
    "all broker connections are down",
    "failed to resolve",
    "transport",
    "connection refused",
)


def offline(flows: Sequence[FlowConfig]) -> dict[str, Runtime]:
    """Every flow's `Runtime` when clusters are not to be asked (`--offline`)."""
    return {f.name: Runtime(f.target, note="not read (--offline)", offline=True) for f in flows}


def read_runtime(
    flows: Sequence[FlowConfig], timeout: float = READ_TIMEOUT_S, *, first_start: bool = False
) -> dict[str, Runtime]:
    """Each flow's run-time control from its target cluster, all flows at once.

    Returns within about twice `timeout` (locating the end of the control topic,
    then reading it); a flow whose read has not finished by then is reported as
    not answering.
    """
    results: dict[str, Runtime] = {}
    links: dict[str, SourceLink] = {}
    lock = threading.Lock()

    def read(flow: FlowConfig) -> None:
        runtime = _read_one(flow, timeout, first_start)
        with lock:
            results[flow.name] = runtime

    def probe(flow: FlowConfig) -> None:
        link = _probe_source(flow, timeout)
        with lock:
            links[flow.name] = link

    threads = [
        threading.Thread(target=read, args=(f,), name=f"runtime {f.name}", daemon=True)
        for f in flows
    ]
    if first_start:
        threads += [
            threading.Thread(target=probe, args=(f,), name=f"link {f.name}", daemon=True)
            for f in flows
        ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 2 * timeout + 1.0
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    late = [thread for thread in threads if thread.is_alive()]
    if late:
        atexit.register(_let_close, late, deadline + CLOSE_GRACE_S)
    with lock:
        runtimes = {
            f.name: results.get(f.name) or Runtime(f.target, note=f"{f.target} did not answer")
            for f in flows
        }
        if first_start:
            for f in flows:
                link = links.get(f.name) or SourceLink(f.source, note=f"{f.source} did not answer")
                runtimes[f.name] = dataclasses.replace(runtimes[f.name], link=link)
        return runtimes


def _let_close(threads: Sequence[threading.Thread], until: float) -> None:
    """At exit, let reads that outlived the answer close their clients, until `until`.

    The answer does not wait for them, but the interpreter should not tear down
    while they are inside librdkafka: its threads call back into Python, which
    cannot be done once the interpreter is finalizing.
    """
    for thread in threads:
        thread.join(max(0.0, until - time.monotonic()))


def _read_one(flow: FlowConfig, timeout: float, first_start: bool) -> Runtime:
    try:
        # Without librdkafka's own log lines: a note says when the cluster does not answer.
        clients = side_clients(flow, "target", {"log_level": 0})
    except ConfigError as exc:
        return Runtime(flow.target, note=f"the clients of {flow.target} cannot be used: {exc}")
    store = ControlStore(clients)
    try:
        control = store.read(flow.name, timeout)
        if not first_start:
            return Runtime(flow.target, control=control)
        progress = saved_progress(flow, clients, timeout)
        return Runtime(
            flow.target, control=control, first_start=preview(flow, clients, progress, timeout)
        )
    except Exception as exc:  # a note, never a stack trace, for one flow's read
        log.debug("reading the run-time changes of %s failed", flow.name, exc_info=True)
        message = error_text(exc)
    finally:
        store.close()
        clients.close()
    return Runtime(flow.target, note=_why(flow, message))


def _probe_source(flow: FlowConfig, timeout: float) -> SourceLink:
    try:
        clients = side_clients(flow, "source", {"log_level": 0})
    except ConfigError as exc:
        return SourceLink(flow.source, note=f"the clients of {flow.source} cannot be used: {exc}")
    try:
        return advise(flow, measure(clients, timeout))
    except Exception as exc:  # a note, never a stack trace, for one flow's probe
        log.debug("measuring the round trip to %s failed", flow.source, exc_info=True)
        message = error_text(exc)
    finally:
        clients.close()
    return SourceLink(flow.source, note=_why(flow, message, "source", "asking"))


def _why(
    flow: FlowConfig, message: str, side: Side = "target", doing: str = "reading them from"
) -> str:
    alias = flow.target if side == "target" else flow.source
    if any(words in message.lower() for words in _NO_ANSWER):
        return f"{alias} did not answer"
    return f"{doing} {alias} failed: {_redact(flow, message, side)}"


def _redact(flow: FlowConfig, message: str, side: Side = "target") -> str:
    """`message` with every secret value of the flow's `side` clients hidden (where it
    stands as a word of its own: a one-letter user name does not hide letters of words)."""
    for client in ("admin", "producer", "consumer"):
        for setting in flow.client_settings(side, client).settings():
            if setting.secret and setting.value:
                alone = rf"(?<![A-Za-z0-9]){re.escape(setting.value)}(?![A-Za-z0-9])"
                message = re.sub(alone, setting.shown, message)
    return message
