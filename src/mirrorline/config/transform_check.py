"""Checking single message transforms with Kafka Connect's own classes, when a file loads.

Whether `transforms.route.type` names a class, and whether that class accepts
`transforms.route.regex`, is known only to the class: Connect validates each
transform's settings against its `ConfigDef` when it configures it. So that a
mistake shows when the file loads (`mirrorline config check` exits 2), not
as a failing flow later, the loader starts every enabled flow's chain once in
a short Java run, exactly as the writer starts it on executors
(`io.mirrorline.writer.TransformChain`, whose `main` reads the chains as JSON
and prints the first problem of each): Connect's transforms, the writer jar,
and the jars of the flows' `plugin.path`. No Spark is involved; a run takes
about half a second, and only files with transforms pay it.

A host without Java or without the connect-transforms jar set (and no way to
fetch it) cannot run the transforms either: that is an error too, saying so.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from mirrorline.config.errors import IssueLog
from mirrorline.config.model import FlowConfig
from mirrorline.config.origin import Origin
from mirrorline.config.redact import REDACTED
from mirrorline.config.transforms import TransformChain

__all__ = ["check_transforms"]

CHECK_CLASS = "io.mirrorline.writer.TransformChain"
TIMEOUT = 120.0
# How Connect's ConfigException names the setting it rejects.
_NAMED = re.compile(r'configuration "?([A-Za-z0-9_.\-]+?)"?(?::| which| with|$)')
_HINT = (
    "check the class name and its settings in Kafka Connect's documentation; "
    "a class of your own goes in a jar listed by plugin.path"
)


def check_transforms(flows: Sequence[FlowConfig], issues: IssueLog) -> None:
    """Start each enabled flow's chain with the real classes; problems to `issues`."""
    chained = [f for f in flows if f.enabled and f.transforms.changes_records]
    if not chained:
        return
    first = chained[0].transforms
    try:
        answers = _run([f.transforms for f in chained], _plugin_jars(chained))
    except _CannotCheck as exc:
        issues.error(
            f"the single message transforms cannot be checked: {exc}",
            _origin_of(first),
            "install Java 17+ and run `mirrorline setup` (it fetches Kafka Connect's "
            "transforms), then load the file again",
        )
        return
    for flow, problem in zip(chained, answers, strict=True):
        if problem:
            origin = _origin_of(flow.transforms, problem)
            problem = _hide_secrets(problem, flow.transforms)
            where, _, what = problem.partition(": ")
            if origin.key is None or not origin.key.endswith(where):
                what = problem  # the line shown is not the one the problem names
            issues.error(f"flow {flow.name}: {what}", origin, _HINT)


class _CannotCheck(Exception):
    pass


def _run(chains: Sequence[TransformChain], user_jars: Sequence[Path]) -> list[str | None]:
    from mirrorline import jvm
    from mirrorline.jvm import JvmSetupError

    try:
        java = jvm.java_executable()
        classpath = [jvm.writer_jar(), *jvm.jars("connect-transforms"), *_jackson(), *user_jars]
    except JvmSetupError as exc:
        raise _CannotCheck(str(exc)) from None
    try:
        done = subprocess.run(
            [java, "-cp", os.pathsep.join(map(str, classpath)), CHECK_CLASS],
            input=json.dumps([c.as_json() for c in chains]),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _CannotCheck(f"the Java check gave no answer in {TIMEOUT:.0f} s") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise _CannotCheck(f"the Java check failed: {tail}")
    answers = json.loads(lines[-1])
    return [a if isinstance(a, str) else None for a in answers]


def _hide_secrets(problem: str, chain: TransformChain) -> str:
    """Connect quotes a rejected value; one that came from a secret is shown hidden."""
    plugins = [t.plugin for t in chain.transforms] + list(chain.predicates.values())
    for setting in (s for p in plugins for s in p.settings.values() if s.secret):
        if setting.value:
            problem = problem.replace(setting.value, REDACTED)
    return problem


def _jackson() -> list[Path]:
    """Spark's own Jackson, which the writer reads its JSON with."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    parts = ("core", "databind", "annotations")
    return [jar for part in parts for jar in sorted(jars.glob(f"jackson-{part}-*.jar"))]


def _plugin_jars(flows: Sequence[FlowConfig]) -> list[Path]:
    return list(dict.fromkeys(jar for f in flows for jar in f.value("plugin.path")))


def _origin_of(chain: TransformChain, problem: str = "") -> Origin:
    """The `type` line of the transform or predicate a problem names (else the first)."""
    plugins = [*((f"transforms.{t.name}", t.plugin) for t in chain.transforms)]
    plugins += [(f"predicates.{name}", p) for name, p in chain.predicates.items()]
    for prefix, plugin in plugins:
        if problem.startswith((prefix + ".", prefix + ":")):
            key = problem[len(prefix) :].split(":", 1)[0].lstrip(".")
            named = _NAMED.search(problem)
            key = key or (named.group(1) if named else "")
            return plugin.settings[key].origin if key in plugin.settings else plugin.origin
    return plugins[0][1].origin if plugins else Origin.default()
