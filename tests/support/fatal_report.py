"""Where the suite was when the pytest process died of a signal (an abort in a native
library, a segmentation fault), kept where the last lines of the run show it.

As a pytest plugin (`tests/conftest.py` loads it), with `MIRRORLINE_FATAL_DIR` set:
Python's fault handler writes every thread's stack to `stacks.txt` there (in a
subdirectory per pytest-xdist worker: `gw0`, `gw1`) instead of
stderr, and each test's id is written to `test.txt` as it starts. Run as a script
after pytest fails (`make test` does), it prints the test and the stack of the thread
that died, in a few lines, so they are the end of the output, not scrolled away by
the stacks of every other thread. When a pytest-xdist worker goes down, the
controlling process prints the same at once, so the cause is in the output even if
the run is stopped before it ends.

A native library says why it aborts on the process's standard error (librdkafka:
`*** file:line: assert: ... ***`), which pytest captures into an unnamed file that
dies with the process. So the capture file of standard error is `stderr.txt` in the
same directory, and the report ends with its last lines.
"""

from __future__ import annotations

import faulthandler
import os
import sys
from pathlib import Path
from typing import IO, Any

import pytest

DIR_ENV = "MIRRORLINE_FATAL_DIR"
_stacks: IO[str] | None = None
_directory: Path | None = None  # this process's, once configured


def _directory_of(config: pytest.Config) -> Path | None:
    """This process's directory: one per pytest-xdist worker under the one given.
    A worker is told by the input its controller gave it, not by the environment,
    which a pytest run started from inside a worker inherits."""
    value = os.environ.get(DIR_ENV)
    if not value:
        return None
    worker = getattr(config, "workerinput", {}).get("workerid")
    return Path(value) / worker if worker else Path(value)


@pytest.hookimpl(trylast=True)  # after pytest's own fault handler plugin, which this replaces
def pytest_configure(config: pytest.Config) -> None:
    global _stacks, _directory
    _directory = directory = _directory_of(config)
    if directory is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    _stacks = open(directory / "stacks.txt", "w")  # open until the process ends
    faulthandler.enable(file=_stacks, all_threads=True)
    _name_stderr_capture(config, directory / "stderr.txt")


def _name_stderr_capture(config: pytest.Config, path: Path) -> None:
    """Make pytest's capture of file descriptor 2 write to `path`: the same open file
    object, its descriptor now that of `path` (and so is 2's while capturing)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    err = getattr(getattr(capture, "_global_capturing", None), "err", None)
    if err is None or getattr(err, "targetfd", None) != 2:
        return  # -s, or capturing by sys.stderr only
    named = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(named, err.tmpfile.fileno())
    if err._state == "started":
        os.dup2(named, 2)
    os.close(named)


def pytest_runtest_logstart(nodeid: str) -> None:
    if _directory is not None:
        (_directory / "test.txt").write_text(nodeid + "\n")


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook, called in the controlling process
def pytest_testnodedown(node: Any, error: object | None) -> None:
    base = os.environ.get(DIR_ENV)
    if error is None or not base:
        return
    directory = Path(base) / node.gateway.id
    lines = _summary(directory, frames=12) or [
        f"worker {node.gateway.id} died with no Python stack (SIGKILL?) during "
        f"{_running(directory)}"
    ]
    reporter = node.config.pluginmanager.get_plugin("terminalreporter")
    for line in lines:
        reporter.write_line(line)


def summary(directory: Path, frames: int = 12) -> list[str]:
    """The lines to print: nothing when no process (pytest's, or a worker's in the
    directory's subdirectories) died of a signal."""
    found = [_summary(d, frames) for d in (directory, *sorted(directory.glob("gw*")))]
    return [line for lines in found for line in lines]


def _summary(directory: Path, frames: int) -> list[str]:
    stacks = directory / "stacks.txt"
    text = stacks.read_text(errors="replace") if stacks.exists() else ""
    if not text.strip():
        return []
    lines = text.splitlines()
    cause = next((line for line in lines if line.startswith("Fatal Python error")), lines[0])
    start = next((i for i, line in enumerate(lines) if line.startswith("Current thread")), None)
    died = lines[start : start + 1 + frames] if start is not None else []
    return [
        f"pytest died: {cause}",
        *died,
        f"(all threads' stacks: {stacks})",
        f"pytest died during {_running(directory)}",
        *_last_stderr(directory),
    ]


def _last_stderr(directory: Path, count: int = 6) -> list[str]:
    """The last lines the process wrote to its standard error in its last test."""
    path = directory / "stderr.txt"
    text = path.read_text(errors="replace") if path.exists() else ""
    lines = [line for line in text.splitlines() if line.strip()][-count:]
    return ["its last lines on standard error:", *lines] if lines else []


def _running(directory: Path) -> str:
    """The test the process in `directory` started last."""
    test = directory / "test.txt"
    return test.read_text().strip() if test.exists() else "(before the first test)"


if __name__ == "__main__":
    for line in summary(Path(sys.argv[1])):
        print(line)
