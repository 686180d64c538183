"""`mirrorline driver --work-dir`: an absolute default that does not depend on the current
directory, created if missing, and a clear error when it cannot be."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorline.cli.driver_cmd import default_work_dir
from mirrorline.cli.main import app
from mirrorline.engine import session
from mirrorline.jvm import JvmSetupError

CONFIG = """\
clusters = a, b
a.bootstrap.servers = 127.0.0.1:1
b.bootstrap.servers = 127.0.0.1:2
a->b.enabled = true
"""


def test_default_is_under_xdg_state_home_or_the_home_directory(monkeypatch, tmp_path: Path):
    assert default_work_dir({"XDG_STATE_HOME": "/var/lib/ops/state"}) == Path(
        "/var/lib/ops/state/mirrorline/driver"
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    expected = tmp_path / ".local" / "state" / "mirrorline" / "driver"
    assert default_work_dir({}) == expected
    # The XDG rules: a relative XDG_STATE_HOME is invalid and ignored.
    assert default_work_dir({"XDG_STATE_HOME": "state"}) == expected
    assert default_work_dir({"XDG_STATE_HOME": ""}) == expected


def test_help_shows_the_resolved_default():
    result = CliRunner().invoke(app, ["driver", "--help"], env={"COLUMNS": "200"})
    words = " ".join(result.output.replace("│", " ").split())
    assert (
        "Default: $XDG_STATE_HOME/mirrorline/driver, or ~/.local/state/mirrorline/driver" in words
    )
    assert f"here {default_work_dir()}" in words


@pytest.fixture
def no_spark(monkeypatch, tmp_path: Path):
    """The driver command stops where it would start Spark; its signal handlers are undone."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def stop(**_kwargs):
        raise JvmSetupError("stopped before starting Spark")

    monkeypatch.setattr(session, "build_spark_session", stop)
    config = tmp_path / "mm2.properties"
    config.write_text(CONFIG)
    yield config
    for number, handler in saved.items():
        signal.signal(number, handler)


def test_the_default_work_dir_is_created_wherever_the_driver_starts(
    no_spark: Path, tmp_path: Path, monkeypatch
):
    state = tmp_path / "state"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = CliRunner().invoke(
        app, ["driver", "-c", str(no_spark)], env={"XDG_STATE_HOME": str(state)}
    )
    assert result.exit_code == 1, result.output
    assert "stopped before starting Spark" in result.stderr
    assert (state / "mirrorline" / "driver").is_dir()
    assert list(elsewhere.iterdir()) == []


def test_a_work_dir_that_cannot_be_created_is_named(no_spark: Path, tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = CliRunner().invoke(
        app, ["driver", "-c", str(no_spark), "--work-dir", str(blocker / "driver")]
    )
    assert result.exit_code == 2
    assert f"cannot create the work directory {blocker / 'driver'}" in result.stderr
    assert "--work-dir" in result.stderr
    assert "Traceback" not in result.output
