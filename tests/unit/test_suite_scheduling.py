"""A pytest-xdist worker that dies mid-run (a native library aborting) costs the suite
one failed test, never a hung run (`support.scheduling`), and the output says where it
died and what it said last (`support.fatal_report`): on a small suite of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from support.scheduling import ByModule

pytest_plugins = ["support.fatal_report"]

def pytest_xdist_make_scheduler(config, log):
    return ByModule(config, log)
"""


def _suite(root: Path) -> None:
    (root / "conftest.py").write_text(CONFTEST)
    (root / "test_a.py").write_text("".join(f"def test_a{i}(): pass\n" for i in range(4)))
    (root / "test_b.py").write_text(
        "import os\n"
        "def test_before(): pass\n"
        "def test_dies():\n"
        "    os.write(2, b'*** native.c:12: assert: it went wrong ***\\n')\n"
        "    os.abort()\n"
        "def test_after(): pass\n"
    )
    (root / "test_c.py").write_text("def test_c(): pass\n")
    (root / "test_d.py").write_text("import os\ndef test_alone_dies(): os.abort()\n")
    (root / "test_e.py").write_text("def test_e0(): pass\ndef test_e1(): pass\n")


def test_a_dead_worker_fails_its_test_and_the_run_goes_on(tmp_path: Path) -> None:
    _suite(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadscope"]
        + ["-p", "no:cacheprovider", "-o", "addopts=", "-rf", str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "MIRRORLINE_FATAL_DIR": str(tmp_path / "fatal")},
        capture_output=True,
        text=True,
        timeout=180,
    )
    summary = run.stdout.splitlines()[-1]
    assert run.returncode == 1, run.stdout[-3000:]
    assert "2 failed, 9 passed" in summary, run.stdout[-3000:]
    assert "FAILED test_b.py::test_dies" in run.stdout
    assert "FAILED test_d.py::test_alone_dies" in run.stdout
    assert "pytest died during test_b.py::test_dies" in run.stdout, run.stdout + run.stderr
    assert "*** native.c:12: assert: it went wrong ***" in run.stdout, run.stdout
