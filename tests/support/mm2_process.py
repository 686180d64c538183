"""Real MirrorMaker 2 (dedicated mode) as a child process, as its users start it."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from mirrorline import jvm

MM2_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
#: Without a configuration of its own, Log4j 2 writes nothing but errors: MM2's log would
#: not show what it did when a test fails.
LOG_CONFIG = Path(__file__).with_name("mm2-log4j2.properties")

#: Lines an MM2 file needs on single-broker clusters (its Connect topics have one replica).
SINGLE_BROKER_LINES = (
    "config.storage.replication.factor = 1",
    "offset.storage.replication.factor = 1",
    "status.storage.replication.factor = 1",
)


class Mm2Process:
    """`connect-mirror-maker.sh FILE --clusters TARGET`, stopped cleanly or killed."""

    def __init__(self, config: Path, target: str, log: Path) -> None:
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            [
                jvm.java_executable(),
                "-Xmx512m",
                f"-Dlog4j2.configurationFile={LOG_CONFIG}",
                "-cp",
                jvm.classpath("mirrormaker"),
                MM2_MAIN,
                str(config),
                "--clusters",
                target,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, as `kill` or systemd stop it: MM2 commits its offsets and leaves."""
        return self._end(signal.SIGTERM, timeout)

    def kill(self, timeout: float = 30.0) -> int:
        """SIGKILL: no last commit, its Connect worker stays in the group until its
        session times out."""
        return self._end(signal.SIGKILL, timeout)

    def _end(self, sig: signal.Signals, timeout: float) -> int:
        if self.running():
            os.killpg(self.process.pid, sig)
        code = self.process.wait(timeout)
        self._log.close()
        return code
