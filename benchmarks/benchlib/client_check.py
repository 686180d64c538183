"""Proof that the data-path settings reached each contender's clients.

A setting written in a file is only a wish: a misspelt prefix is ignored without
a word by MM2. So the benchmark reads back what the clients really use:

- Mirrorline: `mirrorline config check FILE --json`, the effective settings of the
  flow's source consumer and target producer (and the flow's `max.poll.records`);
- MM2 and the copy loop: the Java clients log their whole configuration when they
  start (`ProducerConfig values:`, one `\tkey = value` line per setting); the
  benchmark finds the data-path clients' dumps in the log.

For tuned contenders a value that differs from `DATA_PATH_*` fails the run; for
MM2 shipped the values are only recorded, to show what "shipped" means.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchlib.common import REPO, SOURCE, TARGET, BenchmarkError
from benchlib.contenders import DATA_PATH_CONSUMER, DATA_PATH_PRODUCER, Contender

FLOW = f"{SOURCE}->{TARGET}"


def _same(key: str, expected: str, actual: object) -> bool:
    """Values compare as the clients mean them: `acks = all` is logged as -1."""
    text = str(actual).strip().lower()
    if key == "acks":
        return {"all": "-1"}.get(text, text) == {"all": "-1"}.get(expected, expected)
    return text == expected.lower()


def _mismatches(where: str, wanted: dict[str, str], actual: dict[str, object]) -> list[str]:
    return [
        f"{where} {key} = {actual.get(key, '(not set)')}, expected {value}"
        for key, value in wanted.items()
        if not _same(key, value, actual.get(key, "(not set)"))
    ]


# -- Mirrorline ---------------------------------------------------------------------


def mirrorline_effective(config: Path) -> dict:
    """The flow's effective data-path settings, from `mirrorline config check --json`."""
    out = subprocess.run(
        [sys.executable, "-m", "mirrorline", "config", "check", str(config), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    try:
        report = json.loads(out.stdout)
    except ValueError:
        raise BenchmarkError(
            f"`mirrorline config check {config} --json` printed no JSON (exit {out.returncode}):"
            f"\n{out.stdout[-2000:]}{out.stderr[-2000:]}"
        ) from None
    if not report.get("ok"):
        raise BenchmarkError(f"`mirrorline config check {config}` found errors: {report}")
    flows = [f for f in report["flows"] if f["name"] == FLOW]
    if not flows:
        raise BenchmarkError(f"`mirrorline config check {config}` shows no flow {FLOW}")
    flow = flows[0]

    def values(client: str, keys) -> dict[str, object]:
        settings = flow["clients"][client]
        return {k: settings[k]["value"] for k in keys if k in settings}

    consumer = values("source.consumer", DATA_PATH_CONSUMER)
    consumer["max.poll.records"] = flow["settings"]["max.poll.records"]["value"]
    return {
        "producer": values("target.producer", DATA_PATH_PRODUCER),
        "consumer": consumer,
        "exactly.once.source.support": flow["settings"]["exactly.once.source.support"]["value"],
        "data.path.mode": flow["settings"]["data.path.mode"]["value"],
    }


def check_mirrorline(contender: Contender, config: Path) -> dict:
    """Effective settings of a Mirrorline contender; raises unless they are DATA_PATH's."""
    effective = mirrorline_effective(config)
    problems = _mismatches("target producer", DATA_PATH_PRODUCER, effective["producer"])
    problems += _mismatches("source consumer", DATA_PATH_CONSUMER, effective["consumer"])
    mode = "enabled" if contender.exactly_once else "disabled"
    if effective["exactly.once.source.support"] != mode:
        problems.append(
            f"exactly.once.source.support = {effective['exactly.once.source.support']}, "
            f"expected {mode}"
        )
    path_mode = "real-time" if contender.real_time else "micro-batch"
    if effective["data.path.mode"] != path_mode:
        problems.append(f"data.path.mode = {effective['data.path.mode']}, expected {path_mode}")
    if problems:
        raise BenchmarkError(
            f"{contender.label}: `mirrorline config check {config}` shows settings other "
            "than the benchmark's data-path block:\n  " + "\n  ".join(problems)
        )
    return effective


# -- Java clients (MM2, the copy loop) -----------------------------------------------


def java_client_dumps(log: Path) -> list[tuple[str, dict[str, str]]]:
    """Every `ProducerConfig values:` / `ConsumerConfig values:` block of a JVM log, as
    ("producer" or "consumer", {key: value})."""
    dumps: list[tuple[str, dict[str, str]]] = []
    current: dict[str, str] | None = None
    for line in log.read_text(errors="replace").splitlines():
        if current is not None and line.startswith("\t") and " =" in line:
            key, _, value = line.strip().partition(" =")
            current[key] = value.strip()
            continue
        current = None
        stripped = line.rstrip()
        for kind in ("producer", "consumer"):
            if stripped.endswith(f"{kind.capitalize()}Config values:"):
                current = {}
                dumps.append((kind, current))
    return dumps


def _is_data_path(contender: Contender, kind: str, client_id: str) -> bool:
    """Which logged clients move records (not offset syncs, heartbeats, Connect's own)."""
    if contender.kind == "copy_loop":
        return client_id == f"copy-loop-{kind}"
    if kind == "producer":
        return client_id.startswith("connector-producer-MirrorSourceConnector-")
    return "|MirrorSourceConnector-" in client_id and client_id.endswith("|replication-consumer")


def check_java_clients(contender: Contender, log: Path) -> dict:
    """The data-path clients' logged settings: {"producer": {...}, "consumer": {...},
    "clients": {"producer": n, "consumer": n}}. Raises if a data-path client is
    missing from the log, if they disagree, or (tuned) if a value is not DATA_PATH's."""
    wanted = {"producer": DATA_PATH_PRODUCER, "consumer": DATA_PATH_CONSUMER}
    found: dict[str, list[dict[str, str]]] = {"producer": [], "consumer": []}
    for kind, values in java_client_dumps(log):
        if _is_data_path(contender, kind, values.get("client.id", "")):
            found[kind].append(values)
    problems: list[str] = []
    effective: dict = {"clients": {k: len(v) for k, v in found.items()}}
    for kind, dumps in found.items():
        if not dumps:
            problems.append(f"no {kind} configuration of the data path in the log")
            continue
        seen = [{k: d.get(k, "(not set)") for k in wanted[kind]} for d in dumps]
        if any(s != seen[0] for s in seen):
            problems.append(f"the data-path {kind}s disagree: {seen}")
        effective[kind] = seen[0]
        if contender.tuned:
            for values in dumps:
                problems += _mismatches(f"{kind} {values.get('client.id')}", wanted[kind], values)
    if problems:
        raise BenchmarkError(
            f"{contender.label}: the client settings logged in {log} are not the benchmark's "
            "data-path block:\n  " + "\n  ".join(sorted(set(problems)))
        )
    return effective
