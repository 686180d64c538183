"""Small things every benchmark script uses: progress lines, polling, its error."""

from __future__ import annotations

import argparse
import math
import shlex
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from benchlib import BENCH_DIR, REPO

__all__ = [
    "BENCH_DIR",
    "REPO",
    "SOURCE",
    "TARGET",
    "POLL_S",
    "BenchmarkError",
    "names_among",
    "recorded_command",
    "say",
    "stop_on_sigterm",
    "wait_for",
    "percentile",
    "tail",
]

SOURCE, TARGET = "east", "west"  # the local clusters every benchmark replicates between
POLL_S = 0.1  # how often progress on the target is looked at


class BenchmarkError(RuntimeError):
    """The benchmark cannot go on; the message says what happened and where to look."""


def names_among(text: str, known: Iterable[str], what: str) -> list[str]:
    """An option's comma list of `known` names, in `known`'s order (argparse type)."""
    choices = list(known)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in choices]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(choices)}"
        )
    return [n for n in choices if n in names]  # always in the same order


def recorded_command(script: str, argv: Iterable[str]) -> str:
    """The command line a result records: paths in the checkout relative to it, other
    absolute paths by their last part, so that no result names this machine's folders."""

    def portable(arg: str) -> str:
        key, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        path = Path(value)
        if path.is_absolute():
            value = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name
        return key + eq + value

    return shlex.join(["python", f"benchmarks/{script}", *(portable(a) for a in argv)])


def stop_on_sigterm() -> None:
    """Let SIGTERM end a benchmark as Ctrl-C does: its `finally` blocks stop what it started."""

    def terminate(signum, _frame) -> None:
        raise SystemExit(f"stopped by {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, terminate)


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def wait_for(
    condition: Callable[[], object],
    *,
    timeout: float,
    what: str,
    check: Callable[[], None] | None = None,
    interval: float = POLL_S,
):
    """Poll `condition` until truthy; `check` may raise (a replicator that died)."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if check is not None:
            check()
        if time.monotonic() > deadline:
            raise BenchmarkError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def percentile(ordered: list[int], p: float) -> int:
    """Nearest-rank percentile of an ascending list."""
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def tail(path: Path, lines: int = 40) -> str:
    """The end of a log file, for error messages."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"
