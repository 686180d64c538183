"""Child processes: ones that never outlive their parent, stopping them, their ports."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path


def dying_with_parent(command: list[str], signal_name: str = "KILL") -> list[str]:
    """`command`, wrapped so that the kernel signals it when this process dies.

    Uses util-linux's `setpriv --pdeathsig` (the signal survives the exec into
    the real program). On systems without it the command is returned as is, and
    the caller's own cleanup is the only guard.
    """
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return command
    return [setpriv, "--pdeathsig", signal_name, "--", *command]


def terminate_child(popen: subprocess.Popen[bytes], timeout: float) -> None:
    if popen.poll() is None:
        popen.terminate()
        try:
            popen.wait(timeout)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait(10)


def terminate_pid(pid: int, timeout: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
        time.sleep(0.1)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie has exited; only its parent's wait is missing.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def reserve_port(stack: ExitStack) -> int:
    """A free loopback port; held open until the stack closes so that picks never collide."""
    sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    sock.bind(("127.0.0.1", 0))
    return sock.getsockname()[1]


def port_accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"
