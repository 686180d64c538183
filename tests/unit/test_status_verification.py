"""`mirrorline status` shows each flow's last verification, as the service reads it."""

from __future__ import annotations

from dataclasses import asdict

from mirrorline.cli import status_cmd
from mirrorline.cli.status_cmd import FlowLine, verification_text
from mirrorline.verification.summary import VerificationSummary

FINISHED_MS = 1_795_000_000_000  # 2026-11-18 11:06:40 UTC


def _summary(**changes) -> dict:
    fields = dict(
        verdict="identical",
        started_ms=FINISHED_MS - 4_000,
        finished_ms=FINISHED_MS,
        checked=12_345,
        missing=0,
        extra=0,
        different=0,
        misplaced=0,
        not_yet_copied=7,
        not_covered=0,
    )
    return VerificationSummary(**(fields | changes)).to_dict()


def _line(summary: dict | None) -> FlowLine:
    return FlowLine(
        "east->west", "running", "healthy", "", 1.0, 2.0, 0, 5.0, 1.0, 1.0, "d1", 2,
        last_verification=summary,
    )  # fmt: skip


def test_an_identical_verification_says_when_what_and_how_many():
    text = verification_text(_summary(), FINISHED_MS + 90_000)
    assert text == (
        "last verified 2026-11-18 11:06:40 UTC (90s ago): identical, "
        "12,345 record(s) checked in every topic, 0 difference(s)"
    )


def test_a_different_verification_counts_every_kind_of_difference_and_its_selection():
    summary = _summary(
        verdict="different", missing=2, extra=1, misplaced=1, topics="orders", since="1h"
    )
    text = verification_text(summary, FINISHED_MS)
    assert "different, 12,345 record(s) checked in topics orders since 1h, 4 difference(s)" in text


def test_a_flow_never_verified_says_so():
    assert verification_text(None, FINISHED_MS) == (
        "has not been verified (run `mirrorline verify`)"
    )


def test_the_table_and_the_json_carry_the_last_verification(capsys, monkeypatch):
    monkeypatch.setattr(status_cmd.out, "width", 200)
    status_cmd._print([_line(_summary()), _line(None)], "1m")
    printed = capsys.readouterr().out
    assert "east->west last verified 2026-11-18 11:06:40 UTC" in printed
    assert "east->west has not been verified" in printed
    doc = asdict(_line(_summary()))["last_verification"]
    assert doc["verdict"] == "identical" and doc["checked"] == 12_345
    assert doc["finished_ms"] == FINISHED_MS and doc["differences"] == 0 and doc["topics"] is None
