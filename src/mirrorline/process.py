"""Child processes that never outlive the process that started them."""

from __future__ import annotations

import shutil


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
