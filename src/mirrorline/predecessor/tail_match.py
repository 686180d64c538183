"""Where a predecessor's copy of one partition really ends.

MirrorMaker 2 commits the source offset it copied up to every
`offset.flush.interval.ms`; what it wrote after its last commit is on the
target but not in its offsets (a crash, a SIGKILL, a stop whose final flush
failed). Resuming at the committed offset would copy those records twice.

The copy is found by content. `committed` is the last source offset the
predecessor committed, so its copy is on the target, and everything the
predecessor wrote after it are the source records that follow, in order. Let
S be the source records from `committed` on and T the target partition's
records up to its end. The predecessor's copy ends with S[0..L) for some
length L >= 1: a suffix of T equal to a prefix of S, compared on timestamp,
key, value and headers. Every such L is a border found by one pass of the
Knuth-Morris-Pratt automaton of S over T (the final state and its failure
chain), so the search is linear in what is read.

Distinct records give one L. Records repeated in a row (the same timestamp,
key, value and headers) can give several; the smallest is chosen, since
copying a record twice is recoverable and skipping one is not, and the
caller reports the range that may be copied twice. No L at all (the
committed record is not at the target's tail: the target was written by
someone else since, or it was truncated) means the tail cannot be trusted:
the caller resumes after the committed offset.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

__all__ = ["TailMatch", "match_tail"]


@dataclass(frozen=True)
class TailMatch:
    """The predecessor's copy of S[0..length) ends the target; `alternatives` are the
    other lengths the content allows (longer ones: records possibly copied twice)."""

    length: int
    alternatives: tuple[int, ...] = ()

    @property
    def ambiguous(self) -> bool:
        return bool(self.alternatives)


def match_tail(target: Sequence[Hashable], source: Sequence[Hashable]) -> TailMatch | None:
    """The shortest non-empty prefix of `source` that is a suffix of `target`, or None.

    Elements are compared with `==` (digests of timestamp, key, value, headers).
    """
    if not source or not target:
        return None
    failure = _failure(source)
    state = 0  # length of the longest prefix of `source` ending at the current target record
    for record in target:
        while state and (state == len(source) or source[state] != record):
            state = failure[state - 1]
        if source[state] == record:
            state += 1
    lengths = []
    while state:
        lengths.append(state)
        state = failure[state - 1]
    if not lengths:
        return None
    shortest = lengths[-1]
    return TailMatch(shortest, tuple(sorted(lengths[:-1])))


def _failure(pattern: Sequence[Hashable]) -> list[int]:
    """failure[i]: the longest proper border of pattern[0..i]."""
    failure = [0] * len(pattern)
    border = 0
    for i in range(1, len(pattern)):
        while border and pattern[i] != pattern[border]:
            border = failure[border - 1]
        if pattern[i] == pattern[border]:
            border += 1
        failure[i] = border
    return failure
