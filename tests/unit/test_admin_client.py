"""An admin client dropped in a reference cycle is collected, at worst, on its own result
thread: `admin_client.AdminClient` must not be destroyed there (librdkafka aborts the
process). Each case runs in a child process, since the failure is an abort."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from mirrorline.admin_client import AdminClient

UNREACHABLE = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0}

# The child drops a client in a cycle and runs the cycle collector in the callback of the
# client's own request, on librdkafka's result thread; then it waits until no librdkafka
# thread is left (the client destroyed) and says so.
CHILD = textwrap.dedent(
    """
    import gc, json, os, sys, threading, time
    from confluent_kafka.admin import AdminClient as Confluent
    from mirrorline.admin_client import AdminClient as Ours

    def librdkafka_threads():
        tasks = os.listdir("/proc/self/task")
        names = []
        for task in tasks:
            try:
                names.append(open(f"/proc/self/task/{task}/comm").read())
            except OSError:  # the thread ended meanwhile
                pass
        return [n for n in names if n.startswith("rdk:")]

    gc.disable()
    collected_on = []

    def collect(_future):
        collected_on.append(threading.get_ident())
        gc.enable()
        gc.collect()

    class Owner:
        pass

    owner = Owner()
    owner.itself = owner
    owner.admin = (Ours if sys.argv[1] == "ours" else Confluent)(json.loads(sys.argv[2]))
    owner.admin.describe_cluster(request_timeout=1).add_done_callback(collect)
    del owner
    deadline = time.monotonic() + 30
    while (not collected_on or librdkafka_threads()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert collected_on and collected_on[0] != threading.get_ident(), collected_on
    print("destroyed" if not librdkafka_threads() else "still there")
    """
)


def _child(kind: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, kind, json.dumps(UNREACHABLE)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_dropped_client_is_destroyed_on_the_reaper_thread_not_its_own() -> None:
    ours = _child("ours")
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.strip() == "destroyed"


def test_the_same_drop_of_confluent_kafkas_own_client_aborts() -> None:
    # The hazard is real: without the reaper, the collector destroys the client on its
    # own thread and librdkafka aborts the process.
    theirs = _child("confluent")
    assert theirs.returncode == -6, (theirs.returncode, theirs.stderr)
    assert "librdkafka owned thread" in theirs.stderr


def test_a_closed_client_refuses_requests_and_closes_once() -> None:
    admin = AdminClient(UNREACHABLE)
    admin.close()
    admin.close()
    with pytest.raises(RuntimeError):
        admin.list_topics(timeout=0.1)
