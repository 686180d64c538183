"""Asking an MM2 file's own Java classes: one `java` subprocess per process, a line protocol.

An MM2 file may name Java classes of its own: `replication.policy.class`,
`topic.filter.class`, `group.filter.class`, `config.property.filter.class`, in
jars named by `plugin.path`. Mirrorline asks them wherever it needs a name
decided: the driver's control loops, the operator commands, the service, the
client library. Most of those run no Spark, so the classes run in a small JVM
of their own: the plugin bridge (`io.mirrorline.plugins.PluginBridge`, in
Mirrorline's writer jar), started on the first question and stopped when the
process exits. Its classpath holds MirrorMaker 2's interfaces (jar set
`mm2-interfaces`, fetched from Maven Central on first use like every jar set);
each set of user jars gets a class loader of its own over it, as Kafka Connect
gives each plugin.

Protocol (UTF-8 lines; fields separated by tabs; in a field, `\\`, tab,
newline and carriage return are escaped as `\\\\`, `\\t`, `\\n`, `\\r`; a field
`\\N` is null):

    bridge:  ready                                  (once, when it has started)
    ask:     load ID KIND CLASS NJARS JAR... KEY VALUE ...
    answer:  ok
    ask:     call ID METHOD ARG...
    answer:  ok VALUE                              (text, `true`/`false`, or `\\N`)
    either:  error REASON MESSAGE

KIND is `replication-policy`, `topic-filter`, `group-filter` or
`config-property-filter`; `load` creates CLASS from the jars with its public
constructor without arguments and, if it is `Configurable`, calls
`configure(settings)` with the KEY VALUE pairs, as MM2 does with a
connector's properties. REASON is `not-found`, `interface`, `create`,
`configure` (loading), `threw` (a call), or `protocol`. Questions are asked one
at a time (a lock), each waits at most `ANSWER_TIMEOUT_S`.

Questions are about topic, group and property names, never records, and
answers are kept (`JavaObject.call`). A policy's answers are kept for the
life of the process: a policy names topics from their names alone, so each
question crosses to the JVM once. A filter's are kept for `FILTER_ANSWERS_S`:
the questions of one refresh round are asked once, and a filter that changes
its mind (one that reads a catalog) is heard at the next round, as MM2 asks
its filters again at every refresh. The first question costs the JVM's start
(0.2 s here), a new one a pipe round trip (under 0.1 ms), a kept one nothing.
A `JavaObject` is a value (kind, class, jars, settings): it pickles without
its process and loads again in the process that unpickles it.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import queue
import subprocess
import threading
import time
import zipfile
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mirrorline import jar_fetch, jvm

__all__ = [
    "JavaCallError",
    "JavaClassError",
    "JavaObject",
    "Kind",
    "class_in_jars",
    "stop",
]

Kind = Literal["replication-policy", "topic-filter", "group-filter", "config-property-filter"]
BRIDGE_CLASS = "io.mirrorline.plugins.PluginBridge"
ANSWER_TIMEOUT_S = 60.0
FILTER_ANSWERS_S = 10.0
_NULL = "\\N"
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNESCAPES = {"t": "\t", "n": "\n", "r": "\r"}

_log = logging.getLogger(__name__)


class JavaClassError(ValueError):
    """A Java class cannot serve: missing, wrong interface, or failing to start."""

    def __init__(self, class_name: str, reason: str, message: str) -> None:
        self.class_name = class_name
        self.reason = reason
        super().__init__(message)


class JavaCallError(RuntimeError):
    """A Java policy or filter threw, or the bridge itself failed, answering a question."""


def class_in_jars(class_name: str, jars: tuple[Path, ...]) -> bool:
    """True if one of `jars` holds `class_name` (a cheap look, without a JVM)."""
    entry = class_name.replace(".", "/") + ".class"
    for jar in jars:
        try:
            with zipfile.ZipFile(jar) as archive:
                if entry in archive.NameToInfo:
                    return True
        except (OSError, zipfile.BadZipFile):
            continue
    return False


@dataclass(frozen=True)
class JavaObject:
    """One configured instance of a user's Java class, loaded in the bridge when first asked."""

    kind: Kind
    class_name: str
    jars: tuple[Path, ...]
    # Every setting of the flow, secrets too: never shown.
    settings: tuple[tuple[str, str], ...] = field(repr=False)
    # Question -> (answer, when it was asked), see the module.
    _answers: dict[tuple[str, ...], tuple[str | None, float]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def load(self) -> None:
        """Create and configure it now; `JavaClassError` says why it cannot be."""
        _bridge().handle(self)

    def call(self, method: str, *args: str) -> str | None:
        """The answer of `method(args)` as text (`true`/`false` for booleans), kept a while."""
        key = (method, *args)
        now = time.monotonic()
        kept = self._answers.get(key)
        if kept is not None and (
            self.kind == "replication-policy" or now - kept[1] < FILTER_ANSWERS_S
        ):
            return kept[0]
        answer = _bridge().call(self, method, args)
        self._answers[key] = (answer, now)
        return answer

    def test(self, method: str, *args: str) -> bool:
        """A boolean method's answer."""
        return self.call(method, *args) == "true"

    def __getstate__(self) -> dict[str, object]:
        return {"kind": self.kind, "class_name": self.class_name, "jars": self.jars,
                "settings": self.settings}  # fmt: skip

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_answers", {})


def stop() -> None:
    """Stop this process's bridge, if it runs (also done at exit)."""
    global _current
    with _starting:
        bridge, _current = _current, None
    if bridge is not None:
        bridge.close()


class _Bridge:
    """The running JVM: sends one question at a time and reads its answer."""

    def __init__(self) -> None:
        classpath = [jvm.writer_jar(), *jvm.jars(jar_fetch.PLUGIN_INTERFACES)]
        command = [jvm.java_executable(), "-Xss1m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-cp", os.pathsep.join(str(p) for p in classpath), BRIDGE_CLASS]  # fmt: skip
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._handles: dict[JavaObject, str] = {}
        self._stderr: deque[str] = deque(maxlen=20)
        self._answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._drain, name="java-bridge-stderr", daemon=True).start()
        threading.Thread(target=self._read_answers, name="java-bridge", daemon=True).start()
        with self._lock:
            first = self._read_line()
        if first != "ready":
            raise JavaCallError(f"the Java plugin bridge did not start: {self._last_words()}")
        self.pid = os.getpid()

    def handle(self, obj: JavaObject) -> str:
        with self._lock:
            known = self._handles.get(obj)
            if known is not None:
                return known
            handle = str(next(self._ids))
            jars = [str(j) for j in obj.jars]
            pairs = [x for pair in obj.settings for x in pair]
            fields = ["load", handle, obj.kind, obj.class_name, str(len(jars)), *jars, *pairs]
            reply = self._ask(fields)
            if reply[0] != "ok":
                reason, message = ([*reply, "", ""])[1:3]
                raise JavaClassError(obj.class_name, reason or "", f"{obj.class_name} {message}")
            self._handles[obj] = handle
            return handle

    def call(self, obj: JavaObject, method: str, args: tuple[str, ...]) -> str | None:
        handle = self.handle(obj)
        with self._lock:
            reply = self._ask(["call", handle, method, *args])
        if reply[0] == "ok" and len(reply) == 2:
            return reply[1]
        message = reply[2] if len(reply) > 2 else repr(reply)
        raise JavaCallError(f"{obj.class_name}.{method}({', '.join(args)}): {message}")

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self._process.stdin.close()  # type: ignore[union-attr]
                self._process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()

    def _ask(self, fields: list[str]) -> list[str | None]:
        line = "\t".join(_escape(f) for f in fields)
        try:
            self._process.stdin.write(line + "\n")  # type: ignore[union-attr]
            self._process.stdin.flush()  # type: ignore[union-attr]
        except OSError:
            raise JavaCallError(
                f"the Java plugin bridge has stopped: {self._last_words()}"
            ) from None
        answer = self._read_line()
        if answer is None:
            raise JavaCallError(f"the Java plugin bridge has stopped: {self._last_words()}")
        return [_unescape(f) for f in answer.split("\t")]

    def _read_line(self) -> str | None:
        try:
            line = self._answers.get(timeout=ANSWER_TIMEOUT_S)
        except queue.Empty:
            self._process.kill()
            raise JavaCallError(
                f"the Java plugin bridge gave no answer in {ANSWER_TIMEOUT_S:.0f} s"
            ) from None
        return None if line is None else line.rstrip("\n")

    def _read_answers(self) -> None:
        for line in self._process.stdout:  # type: ignore[union-attr]
            self._answers.put(line)
        self._answers.put(None)

    def _drain(self) -> None:
        for line in self._process.stderr:  # type: ignore[union-attr]
            self._stderr.append(line.rstrip())
            _log.debug("java plugin bridge: %s", line.rstrip())

    def _last_words(self) -> str:
        code = self._process.poll()
        said = " | ".join(self._stderr) or "nothing on stderr"
        return f"exit code {code}, {said}" if code is not None else said


_current: _Bridge | None = None
_starting = threading.Lock()
# Why the bridge cannot start here (no Java, jars that cannot be fetched): said once,
# not found out again for every class of every flow.
_setup_failure: jvm.JvmSetupError | None = None


def _bridge() -> _Bridge:
    global _current, _setup_failure
    with _starting:
        if _setup_failure is not None:
            raise _setup_failure
        if _current is None or _current.pid != os.getpid() or _current._process.poll() is not None:
            try:
                _current = _Bridge()  # a forked child or a dead bridge starts its own
            except jvm.JvmSetupError as exc:
                _setup_failure = exc
                raise
        return _current


def _escape(text: str | None) -> str:
    if text is None:
        return _NULL
    return "".join(_ESCAPES.get(c, c) for c in text)


def _unescape(text: str) -> str | None:
    if text == _NULL:
        return None
    if "\\" not in text:
        return text
    out: list[str] = []
    chars = iter(text)
    for c in chars:
        if c == "\\":
            nxt = next(chars, "")
            out.append(_UNESCAPES.get(nxt, nxt))
        else:
            out.append(c)
    return "".join(out)


atexit.register(stop)
