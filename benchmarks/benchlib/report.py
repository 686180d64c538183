"""The replication benchmark's numbers as ratios, tables and markdown: for the console,
the generated block of RESULTS.md and the benchmark table of the README."""

from __future__ import annotations

from dataclasses import dataclass

from benchlib import machine_speed, stalls
from benchlib.contenders import BASELINE, CONTENDERS, DATA_PATH_CONSUMER, DATA_PATH_PRODUCER
from benchlib.environment import environment_text
from benchlib.turns import AGE_WINDOW_S
from benchlib.workloads import WORKLOADS


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    ratios: str  # the key of this metric's ratio dict in a workload's results
    better: str  # "higher" or "lower"
    fmt: str


METRICS = (
    Metric("throughput_rps", "records/s", "ratios", "higher", "{:,.0f}"),
    Metric("mb_s", "MB/s", "mb_s_ratios", "higher", "{:,.1f}"),
    Metric("cpu_s_per_gb", "CPU s/GB", "cpu_ratios", "lower", "{:,.0f}"),
    Metric("peak_rss_mib", "peak RSS MiB", "rss_ratios", "lower", "{:,.0f}"),
    Metric("startup_s", "startup s", "startup_ratios", "lower", "{:,.1f}"),
    Metric("age_p50_ms", "age p50 ms", "age_p50_ratios", "lower", "{:,.0f}"),
    Metric("age_p99_ms", "age p99 ms", "age_p99_ratios", "lower", "{:,.0f}"),
    Metric("age_max_ms", "age max ms", "age_max_ratios", "lower", "{:,.0f}"),
)


def ratios(contenders: dict[str, dict]) -> dict[str, dict[str, float | None]]:
    """Per metric (by its ratio dict's name): every contender's value / BASELINE's."""
    base = contenders.get(BASELINE)
    out: dict[str, dict[str, float | None]] = {}
    for m in METRICS:
        out[m.ratios] = {}
        for name, numbers in contenders.items():
            value = numbers.get(m.key)
            reference = base.get(m.key) if base else None
            out[m.ratios][name] = (
                round(value / reference, 3) if value is not None and reference else None
            )
    return out


def _cell(m: Metric, value, ratio) -> str:
    if value is None:
        return "n/a"
    text = m.fmt.format(value)
    return f"{text} ({ratio:.2f})" if ratio is not None else text


def _metrics_of(contenders: dict[str, dict]) -> list[Metric]:
    return [m for m in METRICS if any(c.get(m.key) is not None for c in contenders.values())]


def workload_table(result: dict) -> str:
    """One row per contender, one column per metric the workload has; each cell the
    value and, in parentheses, its ratio to the baseline."""
    contenders = result["contenders"]
    metrics = _metrics_of(contenders)
    header = ["contender", *(f"{m.label} ({m.better} is better)" for m in metrics)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(metrics)]
    for name, numbers in contenders.items():
        cells = [_cell(m, numbers.get(m.key), result[m.ratios].get(name)) for m in metrics]
        lines.append(f"| {CONTENDERS[name].label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tables_text(report: dict) -> str:
    parts = []
    for name, result in report["workloads"].items():
        about = WORKLOADS[name].description
        parts += [f"### {name}", "", about[0].upper() + about[1:] + ".", "", workload_table(result)]
        parts += ["", _conditions(result), ""]
        for line in (_rounds(result), _age_windows(result), _checkpoint_ages(result)):
            if line:
                parts += [line, ""]
    parts.append(
        f"In parentheses: the ratio to {CONTENDERS[BASELINE].label} in the same run "
        "(n/a: not measured for this workload)."
    )
    return "\n".join(parts)


def _rounds(result: dict) -> str | None:
    """Each round's records/s and start-up, where the workload ran in rounds."""
    rows = []
    for name, numbers in result["contenders"].items():
        rounds = numbers.get("rounds")
        if rounds:
            rates = ", ".join(f"{r['throughput_rps']:,.0f}" for r in rounds)
            starts = ", ".join(f"{r['startup_s']:.1f}" for r in rounds)
            rows.append(f"{CONTENDERS[name].column} {rates} records/s, started in {starts} s")
    if not rows:
        return None
    return (
        "Each figure above is the median of the workload's rounds; round by round, in "
        f"order: {'; '.join(rows)}."
    )


def _age_windows(result: dict) -> str | None:
    """Record-age p99 per window of the measured part, where the workload has it."""
    rows = []
    for name, numbers in result["contenders"].items():
        p99s = [
            f"{w['age_p99_ms']:,}"
            + (f" (stood still {w['stalled_s']} s)" if "stalled_s" in w else "")
            for w in numbers.get("age_windows") or []
        ]
        if p99s:
            rows.append(f"{CONTENDERS[name].column} {', '.join(p99s)}")
    if not rows:
        return None
    return (
        f"Record-age p99 in ms per {AGE_WINDOW_S}-s window of the measured part, in order: "
        f"{'; '.join(rows)}."
    )


def _checkpoint_ages(result: dict) -> str | None:
    """The age of a caught-up group's checkpoints, where the workload has it."""
    rows = []
    for name, numbers in result["contenders"].items():
        age = numbers.get("checkpoint_age")
        if age is None:
            continue
        if age["age_p50_ms"] is None:
            shown = f"no checkpoint in {age['samples']:,} samples"
        else:
            shown = (
                f"p50 {age['age_p50_ms']:,}, p99 {age['age_p99_ms']:,}, max {age['age_max_ms']:,}"
            )
            if age["without_checkpoint"]:
                shown += f" ({age['without_checkpoint']:,} of {age['samples']:,} before the first)"
        rows.append(f"{CONTENDERS[name].column} {shown}")
    if not rows:
        return None
    return (
        "Checkpoint age in ms, sampled at each commit of a consumer group that keeps up "
        f"with the stream (where it would resume after a failover): {'; '.join(rows)}."
    )


def _conditions(result: dict) -> str:
    loads = ", ".join(
        f"{CONTENDERS[n].column} {c['other_cpu_cores']:.2f}"
        for n, c in result["contenders"].items()
    )
    disturbed = []
    for name, numbers in result["contenders"].items():
        for index, run in enumerate(numbers.get("rounds") or [numbers]):
            if run.get("disturbed"):
                in_round = f" in round {index + 1}" if numbers.get("rounds") else ""
                disturbed.append(
                    f"{CONTENDERS[name].column}{in_round}: "
                    f"{stalls.disturbance_text(run['disturbed'])}"
                )
    stood_still = (
        f" **The machine stopped running the benchmark** ({'; '.join(disturbed)}): "
        "those figures are disturbed."
        if disturbed
        else ""
    )
    return f"CPU cores used by other processes meanwhile: {loads}.{stood_still}"


def settings_text(report: dict) -> str:
    s = report["settings"]
    rounds = s.get("rounds", 1)
    in_rounds = (
        f" Each backlog workload runs in {rounds} rounds, the contenders' order reversed "
        "every other round; its figures are the medians of the rounds."
        if rounds > 1
        else ""
    )
    jvm = f", their JVMs `{s['brokers_jvm']}`" if s.get("brokers_jvm") else ""
    interleaved = s.get("interleave")
    who = "backlog contenders run" if interleaved else "contenders run"
    steady = (
        " The steady workload's contenders run at the same time, each on its own topic, and "
        "take turns with the load, window by window (`benchlib/turns.py`)."
        if interleaved
        else ""
    )
    return (
        f"{s['records']:,} records per backlog, {s['partitions']} partitions, "
        f"`tasks.max = {s['tasks_max']}` for every replicator (the copy loop is one "
        f"consumer and one producer); steady load for {s['latency_seconds']:g} s after a "
        f"{s['warmup_seconds']:g} s warm-up. Single-node KRaft clusters `east` -> `west` "
        f"on loopback, their data {s.get('brokers_data', 'on disk')}{jvm}; {who} "
        f"one after the other, each on its own copy of the same records.{in_rounds}{steady}"
    )


def speed_lines(report: dict) -> list[str]:
    """The machine's speed around the run, with a blank line after (none in older files)."""
    speed = report.get("machine_speed")
    return [machine_speed.text(speed["before"], speed["after"]), ""] if speed else []


def data_path_text() -> str:
    producer = ", ".join(f"`{k}={v}`" for k, v in DATA_PATH_PRODUCER.items())
    consumer = ", ".join(f"`{k}={v}`" for k, v in DATA_PATH_CONSUMER.items())
    return (
        f"Data-path settings of every tuned contender (all but MM2 shipped), checked in "
        f"each contender's effective configuration: producer {producer}; consumer {consumer}."
    )


def results_section(report: dict) -> str:
    """The generated block of RESULTS.md."""
    configurations = [
        f"`{name}`:\n\n```properties\n{text.rstrip()}\n```\n"
        for name, text in report["settings"]["configurations"].items()
    ]
    shipped = report["settings"].get("mm2_shipped_effective")
    lines = [
        f"Run on {report['date']} ({report['duration_s'] / 60:.1f} minutes) with:",
        "",
        "```sh",
        report["command"],
        "```",
        "",
        settings_text(report),
        "",
        data_path_text(),
    ]
    if shipped:
        lines += ["", f"MM2 shipped ran with its defaults, as its log shows: {_settings(shipped)}."]
    lines += [
        "",
        tables_text(report),
        "",
        f"![throughput and record age](results/{report['name']}.png)",
        "",
        environment_text(report["environment"]),
        "",
        *speed_lines(report),
        f"Raw numbers: `benchmarks/results/{report['name']}.json`.",
        "",
        "<details><summary>The contenders' configuration files</summary>",
        "",
        *configurations,
        "</details>",
    ]
    return "\n".join(lines)


def _settings(effective: dict) -> str:
    parts = [f"`{k}={v}`" for kind in ("producer", "consumer") for k, v in effective[kind].items()]
    return ", ".join(parts)


README_ROWS = (
    ("backlog_1k", "throughput_rps"),
    ("backlog_100b", "throughput_rps"),
    ("backlog_lz4", "throughput_rps"),
    ("backlog_1k", "cpu_s_per_gb"),
    ("backlog_1k", "peak_rss_mib"),
    ("backlog_1k", "startup_s"),
    ("steady_5k", "age_p50_ms"),
    ("steady_5k", "age_p99_ms"),
)


def readme_section(report: dict) -> str:
    """The README's benchmark table: the headline numbers of the same run."""
    names = list(next(iter(report["workloads"].values()))["contenders"])
    by_key = {m.key: m for m in METRICS}
    lines = [
        f"Mirrorline against MirrorMaker 2 {report['environment']['versions']['mirrormaker2']} "
        "(dedicated mode, with its shipped defaults and tuned) and a bare copy loop, on a "
        f"{report['environment']['machine']['cpu_cores']}-core machine: "
        f"{settings_text(report)} Every contender but MM2 shipped has the same data-path "
        f"client settings. Run on {report['date']} with:",
        "",
        "```sh",
        report["command"],
        "```",
        "",
        "| workload | metric | " + " | ".join(CONTENDERS[n].column for n in names) + " |",
        "|---|---|" + "---:|" * len(names),
    ]
    for workload, key in README_ROWS:
        result = report["workloads"].get(workload)
        if result is None:
            continue
        m = by_key[key]
        numbers = result["contenders"]
        if all(numbers[n].get(key) is None for n in names):
            continue
        cells = [_cell(m, numbers[n].get(key), result[m.ratios].get(n)) for n in names]
        lines.append(
            f"| {workload} | {m.label} ({m.better} is better) | " + " | ".join(cells) + " |"
        )
    lines += [
        "",
        f"In parentheses: the ratio to {CONTENDERS[BASELINE].label}. Every workload, ratio "
        "and setting: [benchmarks/RESULTS.md](benchmarks/RESULTS.md).",
        "",
        "![throughput and record age](benchmarks/chart.png)",
    ]
    return "\n".join(lines)
