"""The failover state file: what a failover did, step by step, and what failback needs.

A failover is a sequence of steps that each change a cluster (stop a flow,
commit group offsets). The operator's command may be interrupted anywhere (a
closed terminal, a deadline, a cluster that stops answering), so every step
that finishes is written down before the next starts, and a second run
continues after the last finished step instead of starting again. The file
is also the record failback reads: the log end offsets the target had when
the flow stopped, which is where the delta starts.

The file is JSON (UTF-8, sorted keys), written atomically (a temporary file
beside it, then renamed), format version 1:

- ``version`` (1), ``kind`` (``failover``), ``mode`` (``planned`` or
  ``unplanned``), ``flow``, ``source``, ``target``, ``config`` (the file's path);
- ``started_ms``, ``updated_ms``, ``finished_ms`` (null until done);
- ``steps``: finished step name -> epoch ms (`STEPS`, in order);
- ``forced``: whether `--force` let it go on with records left behind;
- ``topics``: source topic -> its remote topic on the target;
- ``left_behind``: ``[[topic, partition, records]]`` not replicated when the
  flow stopped (null when the source did not answer);
- ``source_end_offsets``, ``progress``, ``target_end_offsets``,
  ``delta_starts``: ``[[topic, partition, offset]]`` lists: the source's log
  end offsets (null if it did not answer), the flow's next source offsets, the
  target's log end offsets of the remote topics, and where on the target a
  failback starts copying back each topic producers may write after the
  failover (the target's topic named like the source topic);
- ``newest_timestamps``: ``[[remote topic, partition, epoch ms or null]]``,
  the newest replicated record of each remote partition (unplanned);
- ``groups``: what happened to each consumer group (see `GroupOutcome.to_dict`);
- ``failback``: null, or ``{"started_ms", "finished_ms", "full_resync",
  "positions"}`` once `mirrorline failback` used this file.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mirrorline.certificates import write_private
from mirrorline.state_dirs import state_dir

FORMAT_VERSION = 1
Mode = Literal["planned", "unplanned"]
MODES: tuple[Mode, ...] = ("planned", "unplanned")

# The steps of a failover, in the order they run. Unplanned skips "drained".
DRAINED, STOPPED, RECORDED, GROUPS = "drained", "stopped", "recorded", "groups"
STEPS = (DRAINED, STOPPED, RECORDED, GROUPS)

Partition = tuple[str, int]
Offsets = dict[Partition, int]


class StateFileError(ValueError):
    """A state file that cannot be read, or belongs to another failover."""


@dataclass
class FailbackRecord:
    """What `mirrorline failback` did with this failover's record."""

    started_ms: int
    finished_ms: int | None = None
    full_resync: bool = False
    positions: Offsets = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "started_ms": self.started_ms,
            "finished_ms": self.finished_ms,
            "full_resync": self.full_resync,
            "positions": _offset_list(self.positions),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FailbackRecord:
        return cls(
            started_ms=int(data["started_ms"]),
            finished_ms=_int_or_none(data.get("finished_ms")),
            full_resync=bool(data.get("full_resync", False)),
            positions=_offsets(data.get("positions") or []),
        )


@dataclass
class FailoverState:
    """One failover of a flow `source->target`, as far as it went (see the module)."""

    mode: Mode
    source: str
    target: str
    config: str
    started_ms: int
    updated_ms: int = 0
    finished_ms: int | None = None
    steps: dict[str, int] = field(default_factory=dict)
    forced: bool = False
    topics: dict[str, str] = field(default_factory=dict)
    left_behind: Offsets | None = None
    source_end_offsets: Offsets | None = None
    progress: Offsets = field(default_factory=dict)
    target_end_offsets: Offsets = field(default_factory=dict)
    delta_starts: Offsets = field(default_factory=dict)
    newest_timestamps: dict[Partition, int | None] = field(default_factory=dict)
    groups: list[dict[str, Any]] = field(default_factory=list)
    failback: FailbackRecord | None = None

    @classmethod
    def new(cls, mode: Mode, source: str, target: str, config: str) -> FailoverState:
        now = now_ms()
        return cls(mode, source, target, config, started_ms=now, updated_ms=now)

    @property
    def flow(self) -> str:
        return f"{self.source}->{self.target}"

    @property
    def finished(self) -> bool:
        return self.finished_ms is not None

    def done(self, step: str) -> bool:
        return step in self.steps

    def mark(self, step: str) -> None:
        if step not in STEPS:
            raise ValueError(f"{step!r} is not a failover step; the steps are {STEPS}")
        self.steps.setdefault(step, now_ms())

    def finish(self) -> None:
        self.finished_ms = self.finished_ms or now_ms()

    def left_behind_total(self) -> int:
        return sum(self.left_behind.values()) if self.left_behind else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": FORMAT_VERSION,
            "kind": "failover",
            "mode": self.mode,
            "flow": self.flow,
            "source": self.source,
            "target": self.target,
            "config": self.config,
            "started_ms": self.started_ms,
            "updated_ms": self.updated_ms,
            "finished_ms": self.finished_ms,
            "steps": {s: self.steps[s] for s in STEPS if s in self.steps},
            "forced": self.forced,
            "topics": dict(sorted(self.topics.items())),
            "left_behind": None if self.left_behind is None else _offset_list(self.left_behind),
            "source_end_offsets": None
            if self.source_end_offsets is None
            else _offset_list(self.source_end_offsets),
            "progress": _offset_list(self.progress),
            "target_end_offsets": _offset_list(self.target_end_offsets),
            "delta_starts": _offset_list(self.delta_starts),
            "newest_timestamps": [
                [t, p, ms] for (t, p), ms in sorted(self.newest_timestamps.items())
            ],
            "groups": self.groups,
            "failback": None if self.failback is None else self.failback.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FailoverState:
        if data.get("version") != FORMAT_VERSION or data.get("kind") != "failover":
            raise StateFileError(
                f"not a failover state of format version {FORMAT_VERSION} "
                f"(version {data.get('version')!r}, kind {data.get('kind')!r})"
            )
        mode = data["mode"]
        if mode not in MODES:
            raise StateFileError(f"unknown failover mode {mode!r}")
        left = data.get("left_behind")
        ends = data.get("source_end_offsets")
        failback = data.get("failback")
        return cls(
            mode=mode,
            source=str(data["source"]),
            target=str(data["target"]),
            config=str(data.get("config", "")),
            started_ms=int(data["started_ms"]),
            updated_ms=int(data.get("updated_ms", 0)),
            finished_ms=_int_or_none(data.get("finished_ms")),
            steps={str(k): int(v) for k, v in (data.get("steps") or {}).items() if k in STEPS},
            forced=bool(data.get("forced", False)),
            topics={str(k): str(v) for k, v in (data.get("topics") or {}).items()},
            left_behind=None if left is None else _offsets(left),
            source_end_offsets=None if ends is None else _offsets(ends),
            progress=_offsets(data.get("progress") or []),
            target_end_offsets=_offsets(data.get("target_end_offsets") or []),
            delta_starts=_offsets(data.get("delta_starts") or []),
            newest_timestamps={
                (str(t), int(p)): _int_or_none(ms)
                for t, p, ms in data.get("newest_timestamps") or []
            },
            groups=list(data.get("groups") or []),
            failback=None if failback is None else FailbackRecord.from_dict(failback),
        )


def default_state_dir() -> Path:
    """Where failover state files live (`state_dirs`: `$XDG_STATE_HOME/mirrorline/failover`,
    by default `~/.local/state/mirrorline/failover`)."""
    return state_dir("failover")


def state_file_name(source: str, target: str) -> str:
    """`<source>-to-<target>.json`, with characters unfit for a file name replaced."""
    return f"{_safe(source)}-to-{_safe(target)}.json"


def default_state_path(source: str, target: str) -> Path:
    return default_state_dir() / state_file_name(source, target)


def load_state(path: Path) -> FailoverState | None:
    """The state in `path`, or None when there is no such file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateFileError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return FailoverState.from_dict(json.loads(text))
    except StateFileError as exc:
        raise StateFileError(f"{path}: {exc}") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise StateFileError(f"{path} is not a failover state file ({exc})") from None


def save_state(path: Path, state: FailoverState) -> None:
    """Write `state` to `path` atomically (never seen half-written), owner-only."""
    state.updated_ms = now_ms()
    text = json.dumps(state.to_dict(), indent=2, sort_keys=True) + "\n"
    try:
        write_private(path, text)
    except OSError as exc:
        raise StateFileError(f"cannot write {path}: {exc.strerror}") from None


def archive_state(path: Path) -> Path:
    """Move a state file out of the way, under a name with its time; the new name."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    archived = path.with_name(f"{path.stem}.{stamp}{path.suffix}")
    try:
        path.rename(archived)
    except OSError as exc:
        raise StateFileError(f"cannot move {path} to {archived}: {exc.strerror}") from None
    return archived


def now_ms() -> int:
    return int(time.time() * 1000)


def _safe(alias: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", alias)


def _offset_list(offsets: Mapping[Partition, int]) -> list[list[Any]]:
    return [[t, p, o] for (t, p), o in sorted(offsets.items())]


def _offsets(entries: Iterable[Any]) -> Offsets:
    return {(str(t), int(p)): int(o) for t, p, o in entries}


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
