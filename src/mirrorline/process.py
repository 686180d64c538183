"""Child processes: ones that never outlive their parent, stopping them, their ports."""

from __future__ import annotations

import functools
import os
import random
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


# Ports are picked below the kernel's ephemeral range: a port handed out by
# bind(0) comes from that range, and between its release here and the broker's
# bind any outgoing connection (or a client's self-connect to a stopped broker's
# port) can take it. Below the range only another listener can.
_LOWEST_PICK = 20000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


@functools.cache
def _ephemeral_start() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def reserve_port(stack: ExitStack) -> int:
    """A free loopback port outside the ephemeral range.

    It is held open until the stack closes, so that picks made under one stack
    never collide; picks are random so that separate processes rarely try the
    same port.
    """
    sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    top = _ephemeral_start()
    if top - _LOWEST_PICK >= 1000:
        for port in random.sample(range(_LOWEST_PICK, top), 200):
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    sock.bind(("127.0.0.1", 0))
    return int(sock.getsockname()[1])


def free_port() -> int:
    """A port free at this moment (picked as `reserve_port` does), not held."""
    with ExitStack() as stack:
        return reserve_port(stack)


def port_accepts(port: int) -> bool:
    """True when something listens on `port` of the loopback address.

    A closed port refuses at once; the timeout only bounds a handshake that does
    not complete at once (a listener behind on its accept queue drops the request,
    sent again a second later), which on a saturated machine is no sign of a node
    being down.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(2.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"
