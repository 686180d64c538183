"""Small pieces of wording shared by the commands' output."""

from __future__ import annotations


def counted(number: int, noun: str) -> str:
    """`1 topic`, `3 topics`: a count with its noun, plural when it is not one."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
