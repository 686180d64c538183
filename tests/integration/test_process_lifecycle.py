"""Dev clusters never outlive whoever owns them: `dev down`, a killed owner, Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

from support.wait import wait_until

MIRRORLINE = [sys.executable, "-m", "mirrorline"]


def _processes_mentioning(text: str, program: str = "") -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains `text` (and `program`)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and program in cmdline and state != "Z":
            pids.append(int(proc.name))
    return pids


def _java_processes_using(directory: Path) -> list[int]:
    return _processes_mentioning(str(directory), program="java")


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MIRRORLINE, *args], capture_output=True, text=True, timeout=180)


def test_dev_up_then_down_leaves_no_java_process_and_no_port(tmp_path):
    directory = tmp_path / "dev"
    started = _run("dev", "up", "--clusters", "one,two", "--dir", str(directory), "--json")
    assert started.returncode == 0, started.stderr
    assert len(json.loads(started.stdout)["clusters"]) == 2
    props = (directory / "clusters.properties").read_text()
    assert "clusters = one, two" in props

    status = _run("dev", "status", "--dir", str(directory), "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    clusters = json.loads(status.stdout)
    nodes = [n for c in clusters for n in c["nodes"]]
    ports = [n["port"] for n in nodes] + [n["controller_port"] for n in nodes]
    assert len(nodes) == 2 and all(n["process_alive"] and n["reachable"] for n in nodes)
    assert len(_java_processes_using(directory)) == 2
    assert all(_listening(p) for p in ports)

    stopped = _run("dev", "down", "--dir", str(directory), "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == {"stopped": ["one", "two"]}

    assert _java_processes_using(directory) == []
    assert not any(_listening(p) for p in ports)
    after = _run("dev", "status", "--dir", str(directory))
    assert after.returncode == 1 and "no dev clusters" in after.stdout


def test_brokers_die_with_their_owner_even_on_sigkill(tmp_path):
    directory = tmp_path / "owned"
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from mirrorline.devcluster import DevClusters
                DevClusters({str(directory)!r}).up(["solo"], die_with_parent=True)
                print("ready", flush=True)
                time.sleep(600)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout.readline().strip() == "ready"
        assert len(_java_processes_using(directory)) == 1
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        wait_until(
            lambda: not _java_processes_using(directory),
            timeout=30,
            what="the broker to die with its owner",
        )
    finally:
        owner.kill()
        for pid in _java_processes_using(directory):
            os.kill(pid, signal.SIGKILL)


def test_demo_replicates_both_ways_and_stops_everything_on_ctrl_c(tmp_path):
    directory = tmp_path / "demo"
    demo = subprocess.Popen(
        [*MIRRORLINE, "demo", "--dir", str(directory), "--rate", "100"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:

        def replicated_both_ways() -> bool:
            line = demo.stdout.readline()
            lines.append(line)
            there = re.search(r"west/east\.orders (\d+)", line)
            back = re.search(r"east/west\.payments (\d+)", line)
            if not line and demo.poll() is not None:
                raise AssertionError(f"the demo exited early: {''.join(lines)[-3000:]}")
            return bool(there and back and int(there[1]) > 0 and int(back[1]) > 0)

        try:
            wait_until(
                replicated_both_ways, timeout=180, what="demo records replicated", interval=0
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the demo printed: {''.join(lines)[-3000:]}") from None
        assert len(_java_processes_using(directory)) == 2  # the brokers
        assert _processes_mentioning(str(directory / "mirrorline.properties")), "no driver"
        demo.send_signal(signal.SIGINT)
        rest, _ = demo.communicate(timeout=120)
        lines.append(rest)
    finally:
        if demo.poll() is None:
            demo.kill()
    output = "".join(lines)
    assert demo.returncode == 0, output
    assert "stopping east" in output and "stopping west" in output
    assert _java_processes_using(directory) == []
    assert _processes_mentioning(str(directory)) == [], "the driver outlived the demo"
