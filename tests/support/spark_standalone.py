"""A real Spark standalone cluster on loopback: one master and its workers, as child processes.

Started with the launcher of the installed PySpark (`<pyspark>/bin/spark-class`),
so the master, the workers and the executors the workers start are the same
Spark that the driver runs, in JVMs of their own (not local mode). Everything
binds to 127.0.0.1 on free ports and keeps its files (logs, the workers' work
directories with each executor's output and fetched jars) under one directory.

Each daemon leads a session of its own (the executors a worker starts, and
anything they start, stay in it) and runs under `setpriv --pdeathsig KILL`, so `stop()` ends every
process the cluster started, and the kernel ends the daemons if the process
that started them dies first.

Shared by the integration tests and `benchmarks/standalone_scaling.py`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from mirrorline.process import dying_with_parent, free_port
from support.sessions import kill_session

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
HOST = "127.0.0.1"


def pyspark_home() -> Path:
    """The installed PySpark package: a complete Spark (bin/, jars/) since pip installs it so."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass
class _Daemon:
    name: str  # "master", "worker-1", ...
    popen: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no output)"


class StandaloneCluster:
    """A master and `workers` workers of `cores` cores and `memory` each.

    `env` is added to the daemons' environment; the workers pass it on to the
    executors they start. `spark_home`: the Spark to run (a PySpark package
    directory); by default the PySpark this process imports.
    """

    def __init__(
        self,
        directory: Path,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        env: dict[str, str] | None = None,
        spark_home: Path | None = None,
    ) -> None:
        self.directory = directory.resolve()
        self.spark_home = spark_home or pyspark_home()
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self._env = env or {}
        self._daemons: list[_Daemon] = []
        self.master_url = ""
        self.webui_url = ""

    # -- lifecycle -------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> StandaloneCluster:
        """Start the master, then the workers; return once the master lists all of them ALIVE."""
        deadline = time.monotonic() + timeout
        self.directory.mkdir(parents=True, exist_ok=True)
        port, webui_port = free_port(), free_port()
        self.master_url = f"spark://{HOST}:{port}"
        self.webui_url = f"http://{HOST}:{webui_port}"
        try:
            self._launch(
                "master",
                MASTER_CLASS,
                ["--host", HOST, "--port", str(port), "--webui-port", str(webui_port)],
            )
            self._wait(deadline, "the master to answer", lambda: self.state() is not None)
            for i in range(1, self.workers + 1):
                work_dir = self.directory / f"worker-{i}"
                work_dir.mkdir(exist_ok=True)
                self._launch(
                    f"worker-{i}",
                    WORKER_CLASS,
                    [
                        "--host", HOST, "--port", "0", "--webui-port", "0",
                        "--cores", str(self.cores), "--memory", self.memory,
                        "--work-dir", str(work_dir), self.master_url,
                    ],
                )  # fmt: skip
            self._wait(
                deadline,
                f"{self.workers} ALIVE workers",
                lambda: len(self.alive_workers()) == self.workers,
            )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the workers (they stop their executors), then the master; kill what is left.

        Returns only once no process the cluster started is alive.
        """
        for daemon in reversed(self._daemons):  # workers first: the master outlives them
            if daemon.popen.poll() is None:
                daemon.popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for daemon in reversed(self._daemons):
            try:
                daemon.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for daemon in self._daemons:
            # Whatever a daemon left behind (an executor) is still in its session.
            kill_session(daemon.popen.pid, timeout=timeout, what=f"the Spark {daemon.name}")
            daemon.popen.wait()
        self._daemons.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()

    # -- what the master says --------------------------------------------------------

    def state(self) -> dict | None:
        """The master's status (its web UI's `/json/`), None while it does not answer."""
        return _get_json(f"{self.webui_url}/json/")

    def alive_workers(self) -> list[dict]:
        state = self.state() or {}
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def applications(self) -> list[dict]:
        """Running and finished applications as the master lists them."""
        state = self.state() or {}
        return state.get("activeapps", []) + state.get("completedapps", [])

    def executors_of(self, app_id: str) -> dict[str, list[dict]]:
        """Per ALIVE worker (by id), the executors of `app_id` it runs or ran."""
        found = {}
        for worker in self.alive_workers():
            info = _get_json(f"{worker['webuiaddress']}/json/") or {}
            executors = info.get("executors", []) + info.get("finishedexecutors", [])
            found[worker["id"]] = [e for e in executors if e.get("appid") == app_id]
        return found

    def executor_dirs(self, app_id: str) -> list[Path]:
        """The work directories of `app_id`'s executors (their output, the jars they fetched)."""
        return sorted(d for d in self.directory.glob(f"worker-*/{app_id}/*") if d.is_dir())

    def daemon_pids(self) -> dict[str, int]:
        """The master's and each worker's JVM by name ("master", "worker-1", ...); a
        worker's executors are its descendants."""
        return {d.name: d.popen.pid for d in self._daemons}

    def processes(self) -> dict[int, str]:
        """Every live process working in the cluster's directory, pid -> command line,
        found as `ps` would: the daemons (started there), the executors (in their work
        directories) and anything those start. Independent of how `stop()` finds them."""
        found = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cwd = Path(os.readlink(f"/proc/{entry}/cwd"))
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if state not in ("Z", "X") and cwd.is_relative_to(self.directory):
                found[int(entry)] = command.decode(errors="replace").strip()
        return found

    # -- helpers ---------------------------------------------------------------------

    def _launch(self, name: str, main_class: str, args: list[str]) -> None:
        home = self.spark_home
        env = dict(os.environ)
        env.update(
            {
                "SPARK_HOME": str(home),
                "SPARK_LOCAL_IP": HOST,
                # The daemons only book-keep: a small heap leaves memory to executors.
                "SPARK_DAEMON_MEMORY": "256m",
                # Executors' scratch space (shuffle, spills) stays with the cluster's files.
                "SPARK_LOCAL_DIRS": str(self.directory / "local"),
            }
        )
        env.update(self._env)
        log = self.directory / f"{name}.log"
        command = dying_with_parent([str(home / "bin" / "spark-class"), main_class, *args])
        with open(log, "ab") as out:
            popen = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.directory,
                start_new_session=True,
            )
        self._daemons.append(_Daemon(name, popen, log))

    def _wait(self, deadline: float, what: str, condition) -> None:
        while not condition():
            for daemon in self._daemons:
                if daemon.popen.poll() is not None:
                    raise RuntimeError(
                        f"the Spark {daemon.name} exited with code {daemon.popen.returncode} "
                        f"while waiting for {what}; end of {daemon.log}:\n{daemon.tail()}"
                    )
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {d.log}:\n{d.tail(10)}" for d in self._daemons)
                raise RuntimeError(f"timed out waiting for {what}; daemon logs:\n{logs}")
            time.sleep(0.2)


def _get_json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)
    except (urllib.error.URLError, OSError, ValueError):
        return None
