"""The control records' rules: how list changes combine with the file, and the fold."""

from __future__ import annotations

from dataclasses import dataclass

from mirrorline.control.control_store import _key, _list_key, _list_value
from mirrorline.control.flow_control import ControlFold, ListChanges
from mirrorline.formats import json_record


@dataclass
class Msg:
    """The parts of a consumed record that the fold reads."""

    k: bytes
    v: bytes | None
    o: int

    def key(self) -> bytes:
        return self.k

    def value(self) -> bytes | None:
        return self.v

    def offset(self) -> int:
        return self.o


def _fold(*records: tuple[bytes, bytes | None]) -> ControlFold:
    fold = ControlFold()
    for offset, (key, value) in enumerate(records):
        fold.add(Msg(key, value, offset))
    return fold


def test_effective_list_is_the_file_without_removed_plus_added_in_order():
    changes = ListChanges(added=("b.*", "a"), removed=("x",))
    assert changes.apply(("x", "y", "a")) == ("y", "a", "b.*")
    assert ListChanges().apply(("x",)) == ("x",)
    assert not ListChanges()


def test_fold_keeps_the_latest_word_per_pattern_and_flow():
    fold = _fold(
        (_list_key("a->b", "topics", "orders.*"), _list_value("add")),
        (_list_key("a->b", "topics", "audit"), _list_value("remove")),
        (_list_key("a->b", "topics", "orders.*"), None),  # withdrawn
        (_list_key("a->b", "groups.exclude", "test-.*"), _list_value("add")),
        (_list_key("c->b", "topics", "other"), _list_value("add")),
        (
            _key("a->b", "state"),
            json_record({"state": "paused", "restarts": 2, "updated_ms": 5, "version": 1}),
        ),
    )
    control = fold.flow("a->b")
    assert control.changes("topics") == ListChanges(added=(), removed=("audit",))
    assert control.changes("groups.exclude") == ListChanges(added=("test-.*",))
    assert (control.state, control.restarts, control.state_changed_ms) == ("paused", 2, 5)
    assert fold.flow("c->b").changes("topics").added == ("other",)
    assert fold.flow("x->y").state == "running"


def test_position_requests_and_their_deletion():
    request = json_record(
        {
            "id": "r1",
            "offsets": [["orders", 0, 42], ["orders", 1, 7]],
            "updated_ms": 9,
            "version": 1,
        }
    )
    fold = _fold((_key("a->b", "positions"), request))
    pending = fold.flow("a->b").positions
    assert pending is not None and pending.offsets == {("orders", 0): 42, ("orders", 1): 7}
    fold.add(Msg(_key("a->b", "positions"), None, 5))
    assert fold.flow("a->b").positions is None


def test_records_of_other_formats_are_skipped():
    fold = _fold(
        (b"not json", b"{}"),
        (_key("a->b", "state"), json_record({"state": "sleeping", "updated_ms": 1, "version": 1})),
        (_key("a->b", "state"), json_record({"state": "stopped", "updated_ms": 1, "version": 9})),
    )
    assert fold.flow("a->b").state == "running"
