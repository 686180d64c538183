"""User jars: the classes an MM2 file names that Mirrorline does not ship.

An MM2 file reaches code of its own through Kafka Connect's `plugin.path`: a
comma-separated list of jars and directories. As in Connect, a directory
holds plugins either as jars directly inside it or as subdirectories, each
with its jars. Mirrorline reads the same setting (per flow, at any
precedence level) and puts every jar it finds on the classpath of the JVMs
that run those classes: Spark's driver and its executors (`spark.jars`, which
the driver serves to executors on any cluster manager).

The jars are found when the file loads, so a missing path is a configuration
error naming the key, not a class that cannot be found later.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from mirrorline.config.values import parse_list

__all__ = ["parse_plugin_path", "plugin_jars"]


def parse_plugin_path(text: str) -> tuple[Path, ...]:
    """The jars `plugin.path` names, each once, in order; ValueError names a bad entry."""
    jars: list[Path] = []
    for entry in parse_list(text):
        path = Path(entry).expanduser()
        if not path.is_absolute():
            raise ValueError(f"{entry!r} is not an absolute path")
        if path.is_file():
            if path.suffix != ".jar":
                raise ValueError(f"{entry} is not a jar")
            jars.append(path)
        elif path.is_dir():
            found = sorted(path.glob("*.jar")) + sorted(path.glob("*/*.jar"))
            if not found:
                raise ValueError(f"{entry} holds no jar (directly or one directory down)")
            jars.extend(found)
        else:
            raise ValueError(f"{entry} does not exist")
    return tuple(dict.fromkeys(p.resolve() for p in jars))


def plugin_jars(paths: Iterable[tuple[Path, ...]]) -> tuple[Path, ...]:
    """Every jar of several flows' `plugin.path`, each once."""
    return tuple(dict.fromkeys(jar for jars in paths for jar in jars))
