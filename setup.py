"""Builds Mirrorline's JVM writer into the package when a wheel is made without it.

The writer jar (`src/mirrorline/jars/mirrorline-writer.jar`) is the one piece of
Mirrorline that runs on the per-record path, in Spark's executors (it also carries
the plugin bridge, which runs an MM2 file's own Java classes). `make jvm` builds
it with Maven; a wheel built from a clean checkout (`pip wheel .`) builds it here,
which needs Maven and a JDK 17+ on the building host. Editable installs leave it to
`make jvm`. Everything else of the build is in pyproject.toml.
"""

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
WRITER_SOURCES = ROOT / "jvm" / "writer"
WRITER_JAR = ROOT / "src" / "mirrorline" / "jars" / "mirrorline-writer.jar"


def _stale() -> bool:
    if not WRITER_JAR.is_file():
        return True
    built = WRITER_JAR.stat().st_mtime
    sources = [p for p in WRITER_SOURCES.rglob("*") if p.is_file() and "target" not in p.parts]
    return any(p.stat().st_mtime > built for p in sources)


class BuildWithWriter(build_py):
    def run(self) -> None:
        if getattr(self, "editable_mode", False):  # `make jvm` builds the jar in place
            super().run()
            return
        if WRITER_SOURCES.is_dir() and _stale():
            subprocess.run(
                ["mvn", "--batch-mode", "--quiet", "-s", "jvm/settings.xml", "-f", "jvm/pom.xml",
                 "-pl", "writer", "-DskipTests", "package"],
                cwd=ROOT,
                check=True,
            )
        if not WRITER_JAR.is_file():
            raise SystemExit(f"the writer jar {WRITER_JAR} is missing and jvm/writer is not here")
        super().run()


setup(cmdclass={"build_py": BuildWithWriter})
