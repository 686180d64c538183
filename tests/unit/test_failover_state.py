"""The failover state file: what is written is what is read back, atomically, and a file
that is not one (or belongs to another failover) says so."""

from __future__ import annotations

import json
import stat

import pytest

from mirrorline.failover.state import (
    DRAINED,
    GROUPS,
    RECORDED,
    STOPPED,
    FailbackRecord,
    FailoverState,
    StateFileError,
    archive_state,
    default_state_path,
    load_state,
    save_state,
)


def _state() -> FailoverState:
    state = FailoverState.new("planned", "east", "west", "/etc/mm2.properties")
    state.topics = {"orders": "east.orders"}
    state.progress = {("orders", 0): 40, ("orders", 1): 12}
    state.source_end_offsets = {("orders", 0): 42, ("orders", 1): 12}
    state.left_behind = {("orders", 0): 2}
    state.target_end_offsets = {("east.orders", 0): 40, ("east.orders", 1): 12}
    state.delta_starts = {("orders", 0): 3}
    state.newest_timestamps = {("east.orders", 0): 1_700_000_000_000, ("east.orders", 1): None}
    state.groups = [{"group": "billing", "status": "moved", "partitions": [], "problems": []}]
    state.mark(DRAINED)
    state.mark(STOPPED)
    return state


def test_a_saved_state_reads_back_the_same(tmp_path):
    path = tmp_path / "deep" / "east-to-west.json"
    state = _state()
    state.failback = FailbackRecord(5, positions={("orders", 0): 3}, full_resync=True)
    save_state(path, state)
    loaded = load_state(path)
    assert loaded == state
    assert loaded.flow == "east->west"
    assert loaded.done(STOPPED) and not loaded.done(RECORDED)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["east-to-west.json"]  # no leftovers


def test_the_file_is_json_with_lists_for_partitions(tmp_path):
    path = tmp_path / "s.json"
    save_state(path, _state())
    data = json.loads(path.read_text())
    assert data["version"] == 1 and data["kind"] == "failover" and data["mode"] == "planned"
    assert data["target_end_offsets"] == [["east.orders", 0, 40], ["east.orders", 1, 12]]
    assert data["left_behind"] == [["orders", 0, 2]]
    assert data["newest_timestamps"][1] == ["east.orders", 1, None]
    assert list(data["steps"]) == [DRAINED, STOPPED]
    assert data["finished_ms"] is None and data["failback"] is None


def test_steps_keep_their_first_time_and_finish_once():
    state = _state()
    first = state.steps[DRAINED]
    state.mark(DRAINED)
    assert state.steps[DRAINED] == first
    state.mark(GROUPS)
    state.finish()
    finished = state.finished_ms
    state.finish()
    assert state.finished and state.finished_ms == finished
    with pytest.raises(ValueError, match="not a failover step"):
        state.mark("coffee")


def test_no_file_is_no_state(tmp_path):
    assert load_state(tmp_path / "missing.json") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "is not a failover state file"),
        ('{"version": 2, "kind": "failover"}', "format version 1"),
        ('{"version": 1, "kind": "failover", "mode": "panic"}', "unknown failover mode"),
        ('{"version": 1, "kind": "failover", "mode": "planned"}', "is not a failover state"),
    ],
)
def test_a_file_that_is_not_a_state_says_so(tmp_path, text, message):
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(StateFileError, match=message):
        load_state(path)


def test_the_default_place_follows_xdg_state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_state_path("us/east", "west") == (
        tmp_path / "mirrorline" / "failover" / "us_east-to-west.json"
    )
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_state_path("a", "b") == (
        tmp_path / "home" / ".local" / "state" / "mirrorline" / "failover" / "a-to-b.json"
    )


def test_an_archived_state_moves_aside(tmp_path):
    path = tmp_path / "east-to-west.json"
    save_state(path, _state())
    archived = archive_state(path)
    assert not path.exists()
    assert archived.parent == tmp_path and archived.name.startswith("east-to-west.")
    assert load_state(archived) is not None
