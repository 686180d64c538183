"""Leaving a flow's control records as a fresh flow has them.

The session's clusters are shared by every test, and so is each target's
control topic: a flow `east->west` that one test paused, stopped or gave run-time
lists would stay so for the next test using that flow. Tests that change them
reset the flow afterwards, writing the records' documented format directly.
"""

from __future__ import annotations

from confluent_kafka import Producer

from mirrorline.control.control_store import ControlStore
from mirrorline.control.flow_control import CONTROL_TOPIC
from mirrorline.formats import json_record
from support.kafka_io import cluster_clients, conf


def reset_control(cluster, flow: str) -> None:
    """Withdraw every run-time list change and position request of `flow`; state running."""
    clients = cluster_clients(cluster)
    store = ControlStore(clients)
    try:
        control = store.read(flow)
        keys = [
            json_record({"entry": entry, "flow": flow, "kind": "list", "list": name})
            for name, changes in control.lists.items()
            for entry in (*changes.added, *changes.removed)
        ]
        if control.positions is not None:
            keys.append(json_record({"flow": flow, "kind": "positions"}))
        if keys:
            producer = Producer(conf(cluster.bootstrap_servers))
            for key in keys:
                producer.produce(CONTROL_TOPIC, key=key, value=None, partition=0)
            assert producer.flush(30) == 0, "control records not acknowledged"
        if control.state != "running":
            store.set_state(flow, "running")
    finally:
        store.close()
        clients.close()
