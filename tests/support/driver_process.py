"""`mirrorline driver` as a child process that can be crashed like a lost host.

The driver runs in a session of its own (`start_new_session`); its Spark JVM
leads another one (the driver shields it from signals to its group, see
`engine.session`), which the JVM's own children stay in. The JVM's session is
noted while the driver runs (`child_sessions`), so "every process of both
sessions" is exactly the driver and everything it started. `crash()` SIGKILLs
all of them at once, as a power cut would, and waits until none is left;
nothing of a crashed driver can write to Kafka after `crash()` returns.

The driver is also started under `setpriv --pdeathsig KILL`, so it dies with the
process that started it even if that one is killed; its JVM follows (it exits
when its standard input closes) and the workers follow the JVM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import mirrorline
from mirrorline.process import dying_with_parent
from support.sessions import child_sessions, kill_session

# The `src` directory of the Mirrorline being tested, for the child's PYTHONPATH.
_SOURCE_ROOT = Path(mirrorline.__file__).resolve().parent.parent


def child_env() -> dict[str, str]:
    """The environment of a `python -m mirrorline` child: this Mirrorline, unbuffered."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(_SOURCE_ROOT), env.get("PYTHONPATH", "")) if p
    )
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_mirrorline(*args: object, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `python -m mirrorline ARGS` (this Mirrorline) to its end; its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "mirrorline", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
        check=False,
    )


class DriverProcess:
    """One start of `python -m mirrorline driver`, its output in `log_path`.

    `driver_args` are more options of the command (`--master`, `--spark-conf`),
    `global_args` options of `mirrorline` itself (`--log-level debug`). `program`
    replaces `python -m mirrorline` (an installed `mirrorline` script), with its own
    `env` and working directory `cwd`.
    """

    def __init__(
        self,
        config: Path,
        work_dir: Path,
        log_path: Path,
        *,
        status_every: float = 5,
        driver_args: Sequence[str] = (),
        global_args: Sequence[str] = (),
        program: Sequence[str] = (sys.executable, "-m", "mirrorline"),
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.log_path = log_path
        command = [*program, *global_args, "driver"]
        command += ["--config", str(config)]
        command += ["--work-dir", str(work_dir), "--status-every", str(status_every)]
        command += driver_args
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "wb") as log:
            self.popen = subprocess.Popen(
                dying_with_parent(command),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_env() if env is None else env,
                cwd=cwd,
                start_new_session=True,
            )
        self.session = self.popen.pid  # a session leader's pid is its session id
        self.jvm_sessions: set[int] = set()
        self.started = time.monotonic()

    def __enter__(self) -> DriverProcess:
        return self

    def __exit__(self, *_exc) -> None:
        self.crash()

    def check(self) -> None:
        """Raise with the end of the driver's output if it exited on its own."""
        code = self.exit_code()
        if code is not None:
            raise AssertionError(
                f"the driver exited by itself with code {code}; end of {self.log_path}:\n"
                f"{self.log_tail()}"
            )

    def exit_code(self) -> int | None:
        """The driver's exit code (negative: killed by that signal), None while it runs.

        Looks without reaping the process: until `crash()` reaps it, its pid and
        so its session id cannot be taken by another process.
        """
        if self.popen.returncode is not None:
            return self.popen.returncode
        self.jvm_sessions |= child_sessions(self.popen.pid)
        info = os.waitid(os.P_PID, self.popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is None:
            return None
        return -info.si_status if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED) else info.si_status

    def crash(self, timeout: float = 60.0) -> None:
        """SIGKILL every process of the driver's sessions and wait until all are gone."""
        if self.popen.returncode is not None:
            return  # crashed or stopped before: the session is empty and its id no longer ours
        self.jvm_sessions |= child_sessions(self.popen.pid)
        kill_session(self.session, timeout=timeout, what="the driver's session")
        for session in self.jvm_sessions:
            kill_session(session, timeout=timeout, what="the session of the driver's JVM")
        # Only now: until the leader is reaped its pid, hence the session id, stays ours.
        self.popen.wait()

    def stop(self, timeout: float = 90.0, *, group: bool = False) -> bool:
        """SIGTERM (stop between batches) to the driver, or with `group` to its whole process
        group as a service manager would; True if the driver exited with code 0 in time.

        Whatever is left afterwards (or everything, on timeout) is crashed.
        """
        if self.exit_code() is None:
            # not Popen.send_signal: it reaps
            if group:
                os.killpg(self.session, signal.SIGTERM)
            else:
                os.kill(self.popen.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.exit_code() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        graceful = self.exit_code() == 0
        self.crash()
        return graceful

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no output)"
        return "\n".join(text.splitlines()[-lines:])
