"""Partition leadership of the clusters of a chaos run, watched: every move, when it happened.

Leadership moves when a node stops or dies, and when leadership goes back to
the preferred replicas: at the end of every broker event (`chaos_events`), or
by the brokers themselves every `leader.imbalance.check.interval.seconds`.
Every client of a partition that moves stalls for a moment, so a run reports
each move with its time; a move outside any event is the one to look for when
a window without an event shows a stall.

A thread asks each cluster's metadata every `interval_s` seconds; a move
shorter than that may be missed, which only the restarts of a node make
likely, and those are events anyway.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from mirrorline.devhealth import admin_client


@dataclass(frozen=True)
class LeaderMove:
    at_s: float  # seconds into the run
    cluster: str
    partition: str  # topic[partition]
    before: int  # node ids; -1: no leader
    after: int


class LeaderWatch(threading.Thread):
    """Records every leadership move of the clusters in `configs` (alias -> client config)."""

    def __init__(
        self, configs: Mapping[str, Mapping[str, str]], began: float, interval_s: float = 1.0
    ) -> None:
        super().__init__(name="leader-watch", daemon=True)
        self._admins = {alias: admin_client(config) for alias, config in configs.items()}
        self._began = began
        self._interval_s = interval_s
        self._halt = threading.Event()
        self._leaders: dict[tuple[str, str], int] = {}
        self.moves: list[LeaderMove] = []

    def run(self) -> None:
        while not self._halt.wait(self._interval_s):
            for alias, admin in self._admins.items():
                try:
                    metadata = admin.list_topics(timeout=5)
                except Exception:  # noqa: BLE001 - a cluster away answers nothing; next round
                    continue
                self._note(alias, metadata)

    def _note(self, alias: str, metadata) -> None:
        at_s = round(time.monotonic() - self._began, 1)
        for name, topic in metadata.topics.items():
            for partition in topic.partitions.values():
                key = (alias, f"{name}[{partition.id}]")
                before = self._leaders.get(key)
                if before is not None and before != partition.leader:
                    self.moves.append(LeaderMove(at_s, alias, key[1], before, partition.leader))
                self._leaders[key] = partition.leader

    def stop(self) -> None:
        self._halt.set()
        if self.ident is not None:
            self.join(30)
