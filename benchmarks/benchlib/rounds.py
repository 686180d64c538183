"""Backlog workloads in rounds: every contender several times, figures as medians.

On a small shared machine one backlog run of a contender moves by a third from
one run to the next (benchmarks/RESULTS.md, "Five rounds against the copy
loop"), more than the goals' margins. So each backlog workload can run in
rounds: every round runs every contender once, each on its own fresh copy of
the records, the contenders' order reversed every other round so that none is
always first or last. A contender's reported figure for each metric is the
median of its rounds; its other numbers (CPU by thread, client settings, its
stop) are those of its round with the median records/s. Every round's
headline figures, and whether the machine stood still in it, stay in the results,
under `rounds`.
"""

from __future__ import annotations

import statistics

# The figures kept for every round, and reported as the median of the rounds.
ROUND_KEYS = ("throughput_rps", "mb_s", "cpu_s_per_gb", "peak_rss_mib", "startup_s", "transfer_s")


def order(contenders: list[str], round_index: int) -> list[str]:
    """The contenders in the order of round `round_index` (0-based): reversed every other."""
    return list(contenders) if round_index % 2 == 0 else list(reversed(contenders))


def combine(runs: list[dict]) -> dict:
    """One contender's numbers over its rounds, in round order (see the module docstring)."""
    if len(runs) == 1:
        return runs[0]
    by_rate = sorted(runs, key=lambda r: r["throughput_rps"])
    middle = dict(by_rate[(len(by_rate) - 1) // 2])
    for key in ROUND_KEYS:
        values = [r[key] for r in runs if r.get(key) is not None]
        if values:
            middle[key] = round(statistics.median(values), 2)
    middle["rounds"] = [
        {**{key: r.get(key) for key in ROUND_KEYS}, "disturbed": r.get("disturbed")} for r in runs
    ]
    return middle
