"""Every process of a session: to end a process tree completely, whatever forked what.

A child started with `start_new_session` leads a session of its own; everything
it starts stays in that session (Spark's JVMs, PySpark's worker daemon and its
forks change their process group at most, never their session). So "every live
process of the session" is exactly the child and all its descendants, even
those whose parent already died.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def session_members(session: int) -> list[int]:
    """Pids of the session's processes that are not yet dead (zombies count as dead)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses; fields follow the last ')'.
        fields = stat.rsplit(")", 1)[1].split()
        state, member_of = fields[0], int(fields[3])
        if member_of == session and state not in ("Z", "X"):
            members.append(int(entry))
    return members


def kill_session(session: int, *, timeout: float, what: str) -> None:
    """SIGKILL every process of `session` until none is left; fail naming `what` at the deadline.

    The caller must not have reaped the session leader yet: until then its pid,
    hence the session id, cannot be reused by an unrelated process.
    """
    deadline = time.monotonic() + timeout
    while members := session_members(session):
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise AssertionError(
                f"processes {members} of {what} survived SIGKILL for {timeout:.0f}s"
            )
        time.sleep(0.05)


def child_sessions(pid: int) -> set[int]:
    """Sessions led by direct children of `pid` (a child that called setsid), such as
    the Spark JVM the driver starts in a session of its own."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent, session = int(fields[1]), int(fields[3])
        if parent == pid and session == int(entry):
            found.add(session)
    return found
