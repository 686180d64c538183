"""The replication benchmark's chart: throughput per contender and workload, and
record age p50/p99 per contender under the steady load.

matplotlib is the `bench` extra (`pip install -e '.[bench]'`; `make bench`
installs it); it is imported here only, so the rest of the benchmark runs
without it until a chart is drawn.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from benchlib.common import BenchmarkError
from benchlib.contenders import CONTENDERS


def draw(report: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        raise BenchmarkError(
            "drawing the chart needs matplotlib: pip install -e '.[bench]' (make bench does)"
        ) from None

    workloads = report["workloads"]
    names = list(next(iter(workloads.values()))["contenders"])
    steady = [w for w, r in workloads.items() if _has_ages(r)]
    fig, axes = plt.subplots(1, 2 if steady else 1, figsize=(13 if steady else 8, 5), squeeze=False)
    width = 0.8 / len(names)

    ax = axes[0][0]
    for i, name in enumerate(names):
        values = [workloads[w]["contenders"][name]["throughput_rps"] for w in workloads]
        xs = [x + (i - (len(names) - 1) / 2) * width for x in range(len(workloads))]
        bars = ax.bar(xs, values, width, label=CONTENDERS[name].column)
        ax.bar_label(bars, labels=[_thousands(v) for v in values], fontsize=7)
    ax.set_xticks(range(len(workloads)), list(workloads))
    ax.set_ylabel("records/s (first record to last on the target)")
    ax.yaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
    ax.set_title("Throughput")
    ax.legend(fontsize=8)

    if steady:
        ax = axes[0][1]
        result = workloads[steady[0]]["contenders"]
        xs = list(range(len(names)))
        for offset, (key, label) in zip(
            (-0.2, 0.2), (("age_p50_ms", "p50"), ("age_p99_ms", "p99")), strict=True
        ):
            values = [result[n][key] for n in names]
            bars = ax.bar([x + offset for x in xs], values, 0.4, label=label)
            ax.bar_label(bars, labels=[f"{v:,}" for v in values], fontsize=7)
        ax.set_xticks(xs, [CONTENDERS[n].column for n in names], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("record age at the target, ms (log scale)")
        ax.set_title(f"Record age, {steady[0]}")
        ax.legend(fontsize=8)

    fig.suptitle(f"Mirrorline vs MirrorMaker 2 vs copy loop, {report['date']}", fontsize=11)
    command = textwrap.fill(report["command"], width=150 if steady else 100)
    lines = command.count("\n") + 1
    fig.text(0.5, 0.01, command, ha="center", va="bottom", fontsize=7, family="monospace")
    fig.tight_layout(rect=(0, 0.02 + 0.025 * lines, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _thousands(value: float) -> str:
    return f"{value / 1000:.0f}k" if value >= 10_000 else f"{value / 1000:.1f}k"


def _has_ages(result: dict) -> bool:
    return all(c.get("age_p50_ms") is not None for c in result["contenders"].values())
