"""Why an operator command stops, and its exit code.

Every command that changes flows or groups exits the same way: 0 when it did what
was asked, `EXIT_FAILED` when the clusters, a flow or a group did not allow it,
`EXIT_USAGE` when the command line, the configuration or a file is wrong (as
Typer's own usage errors). The work behind a command raises `Failure`; only the
command turns it into output and an exit code.
"""

from __future__ import annotations

from collections.abc import Iterable

EXIT_FAILED = 1  # the clusters, the flow or the group did not allow it
EXIT_USAGE = 2  # the command line, the configuration or a file is wrong


class Failure(Exception):
    """Why a command stops: a message, its exit code and, for lists, one line per problem."""

    def __init__(self, message: str, code: int = EXIT_FAILED, details: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.details = tuple(details)
