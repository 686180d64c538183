"""A jar of Java plugins for MirrorMaker 2 files, built the way a user builds theirs.

`java/plugins/example/mirror/*.java` implement MM2's interfaces (a replication
policy, topic/group/config-property filters); `build_plugin_jar` compiles them
with `javac` against the `mm2-interfaces` jar set that Mirrorline fetches, and
packs them with `jar`. One build per test session is enough.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from mirrorline import jvm

SOURCES = Path(__file__).parent / "java" / "plugins"
PACKAGE = "example.mirror"


def build_plugin_jar(directory: Path) -> Path:
    """Compile the example plugins into `directory/example-plugins.jar`."""
    javac, jar_tool = _tool("javac"), _tool("jar")
    classes = directory / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    classpath = os.pathsep.join(str(j) for j in jvm.jars("mm2-interfaces"))
    sources = [str(p) for p in sorted(SOURCES.rglob("*.java"))]
    _run([javac, "--release", "17", "-cp", classpath, "-d", str(classes), *sources])
    jar = directory / "example-plugins.jar"
    _run([jar_tool, "--create", "--file", str(jar), "-C", str(classes), "."])
    return jar


def _tool(name: str) -> str:
    beside = Path(jvm.java_executable()).resolve().parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    assert found, f"{name} (a JDK) is needed to build the example plugins"
    return found


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{command[0]} failed:\n{done.stdout}{done.stderr}"
