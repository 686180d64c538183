"""The streaming comparison of a source partition with its copy through the flow's runs."""

from __future__ import annotations

from mirrorline.control.translation import Run
from mirrorline.verification.compare import compare_partition, target_span
from mirrorline.verification.report import PartitionReport


def rec(offset: int, n: int, *, headers=None, ts: int = 1000, skipped: bool = False):
    return (offset, (ts + n, f"k{n}".encode(), f"v{n}".encode(), headers), skipped)


def batches(records, size: int = 3):
    return [records[i : i + size] for i in range(0, len(records), size)]


def compare(source, target, runs, start=0, end=None, predecessor_end=0):
    end = end if end is not None else (source[-1][0] + 1 if source else start)
    report = PartitionReport("orders", 0, "east.orders", start, end)
    span = target_span(runs, start, end)
    target_end = span[1] if span else 0
    return compare_partition(
        report, runs, batches(source), batches(target), target_end, predecessor_end
    )


def offsets(findings, key):
    return [entry[key] for entry in findings.first]


def test_a_replayed_batch_leaves_duplicates_between_runs():
    source = [rec(o, o) for o in range(10)]
    # A crash replayed 5..9: the first attempt at target 5..9, the second at 10..14,
    # and the runs were cut to map 5..9 to the second.
    target = [rec(o, o) for o in range(10)] + [rec(10 + i, 5 + i) for i in range(5)]
    runs = [Run(0, 0, 5), Run(5, 10, 5)]
    report = compare(source, target, runs)
    assert report.checked == 10
    assert report.missing.count == report.different.count == report.misplaced.count == 0
    assert offsets(report.extra, "target_offset") == [5, 6, 7, 8, 9]
    assert offsets(report.extra, "duplicate_of") == [5, 6, 7, 8, 9]


def test_exact_copy_is_identical():
    source = [rec(o, o) for o in range(20)]
    target = [rec(100 + o, o) for o in range(20)]
    report = compare(source, target, [Run(0, 100, 20)])
    assert report.checked == 20 and report.differences == 0


def test_a_copy_missing_inside_a_run_is_missing_and_the_rest_misplaced():
    source = [rec(o, o) for o in range(10)]
    target = [rec(o if o < 4 else o - 1, o) for o in range(10) if o != 4]
    report = compare(source, target, [Run(0, 0, 10)])
    assert offsets(report.missing, "source_offset") == [4]
    assert report.missing.count == 1
    assert report.different.count == report.extra.count == 0
    assert report.misplaced.count == 5  # 5..9 are one offset early
    assert report.misplaced.first[0] == {"source_offset": 5, "target_offset": 5, "found_at": 4}


def test_a_source_record_no_run_maps_is_missing_unless_the_flow_skipped_it():
    source = [rec(o, o) for o in range(3)] + [rec(3, 3, skipped=True)] + [rec(4, 4)]
    source += [rec(5, 5)]
    target = [rec(0, 0), rec(1, 1), rec(2, 2)]
    report = compare(source, target, [Run(0, 0, 3)])
    assert report.skipped_by_flow == 1
    assert [(e["source_offset"], e["target_offset"]) for e in report.missing.first] == [
        (4, None),
        (5, None),
    ]


def test_mapped_offset_beyond_the_target_end_is_missing():
    source = [rec(o, o) for o in range(5)]
    target = [rec(o, o) for o in range(3)]
    report = compare(source, target, [Run(0, 0, 5)])
    assert offsets(report.missing, "source_offset") == [3, 4]
    assert offsets(report.missing, "target_offset") == [3, 4]


def test_a_changed_header_is_different_naming_the_field():
    source = [rec(o, o) for o in range(5)]
    target = [rec(o, o, headers=(("h", b"x"),) if o == 2 else None) for o in range(5)]
    report = compare(source, target, [Run(0, 0, 5)])
    assert report.different.first == [
        {"source_offset": 2, "target_offset": 2, "fields": ["headers"]}
    ]
    assert report.missing.count == report.extra.count == report.misplaced.count == 0


def test_each_field_is_named():
    source = [rec(0, 0), rec(1, 1)]
    changed = (5, b"other", b"v0", (("a", None),))
    target = [(0, changed, False), rec(1, 1)]
    report = compare(source, target, [Run(0, 0, 2)])
    assert report.different.first[0]["fields"] == ["timestamp", "key", "headers"]


def test_an_extra_copy_inside_a_run_is_a_duplicate():
    source = [rec(o, o) for o in range(6)]
    # The copy of 2 was written twice; the runs know nothing of it.
    target = [rec(0, 0), rec(1, 1), rec(2, 2), rec(3, 2), rec(4, 3), rec(5, 4), rec(6, 5)]
    report = compare(source, target, [Run(0, 0, 6)])  # target offset 6 read as slack
    assert report.extra.first == [{"target_offset": 3, "duplicate_of": 2}]
    assert report.missing.count == report.different.count == 0
    assert offsets(report.misplaced, "source_offset") == [3, 4, 5]


def test_an_extra_record_between_runs():
    source = [rec(o, o) for o in range(6)]
    target = [rec(0, 0), rec(1, 1), rec(2, 2), rec(3, 99), rec(4, 3), rec(5, 4), rec(6, 5)]
    report = compare(source, target, [Run(0, 0, 3), Run(3, 4, 3)])
    assert report.extra.first == [{"target_offset": 3, "duplicate_of": None}]
    assert report.differences == 1


def test_source_records_gone_since_the_copy_are_not_differences():
    # Source offsets 2 and 3 were compacted away after the flow copied them.
    source = [rec(o, o) for o in (0, 1, 4, 5)]
    target = [rec(o, o) for o in range(6)]
    report = compare(source, target, [Run(0, 0, 6)])
    assert report.source_removed == 2 and report.differences == 0 and report.checked == 4


def test_source_gaps_between_runs_are_no_differences():
    # Offsets 3 and 4 hold no records (aborted transaction): two runs, nothing missing.
    source = [rec(o, o) for o in (0, 1, 2, 5, 6)]
    target = [rec(t, n) for t, n in ((0, 0), (1, 1), (2, 2), (4, 5), (5, 6))]
    report = compare(source, target, [Run(0, 0, 3), Run(5, 4, 2)])
    assert report.differences == 0 and report.checked == 5


def test_target_records_past_the_span_are_not_extra():
    source = [rec(o, o) for o in range(3)]
    target = [rec(o, o) for o in range(3)] + [rec(3, 50), rec(4, 51)]
    report = compare(source, target, [Run(0, 0, 3)])
    assert report.differences == 0


def test_records_mm2_copied_between_syncs_out_of_line_are_not_covered():
    # MM2 copied 0..9 with two duplicates (target 0..11); its syncs (0, 0) and (9, 11) are
    # not in line, so they are two runs of one record. MM2 committed 9; the flow took over
    # at 10 and copied 10..14 at 12..16.
    source = [rec(o, o) for o in range(15)]
    mm2 = [rec(0, 0)] + [
        rec(t, n) for t, n in zip(range(1, 11), [1, 2, 2, 3, 4, 5, 6, 6, 7, 8], strict=True)
    ]
    target = mm2 + [rec(11, 9)] + [rec(12 + i, 10 + i) for i in range(5)]
    runs = [Run(0, 0, 1), Run(9, 11, 1), Run(10, 12, 5)]
    report = compare(source, target, runs, predecessor_end=10)
    assert report.differences == 0
    assert report.not_covered == 8 and report.checked == 7
    # Without MM2's commit, the same records would be missing and the duplicates extra.
    report = compare(source, target, runs)
    assert report.missing.count == 8 and report.extra.count == 10


def test_target_span_of_a_range():
    runs = [Run(0, 0, 5), Run(5, 12, 5)]
    assert target_span(runs, 0, 10) == (0, 17)
    assert target_span(runs, 3, 7) == (3, 14)
    assert target_span(runs, 10, 12) is None
