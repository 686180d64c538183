"""The Kafka client settings of each client role, for flows and for clusters.

A flow has six client roles: a side (`source`, `target`) and a client type
(`consumer`, `producer`, `admin`); a cluster outside any flow has one role per
client type, for tools and the client library. A role's settings come,
weakest first, from Mirrorline's defaults for it (`role_defaults`), the lines
of the file that win for it (`ranking`) and the values Mirrorline always sets
(`forced_settings`, which overrule a line with a warning). The winners are
kept with their Java names, for code that hands them to Java clients, and
translated into librdkafka settings (`client_translation`) for Mirrorline's
own clients.

A translation problem is an error only for a role in use: the flow says which
of its roles it uses (`flows`), and a cluster's clients are in use when it has
bootstrap servers. Other problems travel on the flow or cluster, and are
raised when its client settings are asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mirrorline.config.client_translation import translate
from mirrorline.config.clients import JAVA_CLIENT_SETTINGS
from mirrorline.config.errors import ConfigIssue, IssueLog, unique_issues
from mirrorline.config.model import (
    CLIENT_TYPES,
    SIDES,
    ClientSettings,
    ClientType,
    ClusterConfig,
    Setting,
    Side,
)
from mirrorline.config.origin import Origin
from mirrorline.config.ranking import Entry, Rank, client_candidates

__all__ = [
    "OS_SOCKET_BUFFER",
    "RECONNECT_BACKOFF_MAX_MS",
    "ClientRoles",
    "Role",
    "forced_settings",
    "role_defaults",
]

Role = tuple[Side, ClientType]

#: Longest pause between two attempts to reach a lost broker (see `role_defaults`).
RECONNECT_BACKOFF_MAX_MS = "1000"
#: A Java client's socket buffer size that leaves it to the operating system.
OS_SOCKET_BUFFER = "-1"


def role_defaults(label: str, side: Side | None, client: ClientType) -> dict[str, str]:
    """Java-named defaults for one client role, lower than anything in the file.

    `client.id` names the role so brokers' logs and quotas can tell clients
    apart, and consumers get a `group.id` of the same name. Consumers start
    at `earliest` (MM2); the source consumer reads `read_uncommitted` (the
    Java default MM2 uses; librdkafka's default differs, so it is set
    explicitly); producers wait for all in-sync replicas, and the target
    producer is idempotent so retries neither duplicate nor reorder records.

    Every client retries a lost broker at least once a second (the Java
    clients' default; librdkafka's is 10 s), so replication resumes within
    about a second of a broker's return instead of up to ten.

    The source consumer, the client that crosses the WAN when Mirrorline runs
    near the target, leaves its TCP receive buffer to the operating system
    (`receive.buffer.bytes = -1`). The Java default fixes it at 64 KiB, which
    also turns Linux's autotuning off: a connection then carries at most 64 KiB
    per round trip, 1.3 MB/s at 50 ms, whatever the fetch sizes. Autotuned, the
    window grows to the path's bandwidth-delay product (up to the kernel's
    `net.ipv4.tcp_rmem` maximum); on a LAN nothing changes.
    """
    role = f"{side}-{client}" if side else client
    defaults = {
        "client.id": f"mirrorline|{label}|{role}",
        "reconnect.backoff.max.ms": RECONNECT_BACKOFF_MAX_MS,
    }
    if client == "consumer":
        # librdkafka refuses a consumer without a group, even one that only
        # uses assign(); no offsets are committed under it.
        defaults["group.id"] = f"mirrorline|{label}|{role}"
    if side is None:
        return defaults
    if client == "consumer":
        defaults["auto.offset.reset"] = "earliest"
    if (side, client) == ("source", "consumer"):
        defaults["isolation.level"] = "read_uncommitted"
        defaults["receive.buffer.bytes"] = OS_SOCKET_BUFFER
    if client == "producer":
        defaults["acks"] = "all"
    if (side, client) == ("target", "producer"):
        defaults["enable.idempotence"] = "true"
    return defaults


def forced_settings(side: Side | None, client: ClientType) -> dict[str, str]:
    """Java-named values Mirrorline always sets for a flow's client role.

    Consumers never commit offsets by themselves (MM2 does the same):
    progress lives in Mirrorline's own topics.
    """
    if side is not None and client == "consumer":
        return {"enable.auto.commit": "false"}
    return {}


@dataclass(frozen=True)
class ClientRoles:
    """Client roles resolved from the placed lines of one file; problems go to `issues`."""

    entries: Sequence[Entry]
    issues: IssueLog

    def flow_clients(
        self, source: str, target: str, checked: set[Role]
    ) -> tuple[dict[Role, ClientSettings], dict[Role, ClientSettings], tuple[ConfigIssue, ...]]:
        """A flow's librdkafka and Java-named settings per role, and the problems left unchecked.

        Translation problems of the roles in `checked` are errors; those of the
        other roles are returned, to travel on the flow.
        """
        clients: dict[Role, ClientSettings] = {}
        java: dict[Role, ClientSettings] = {}
        unchecked: list[ConfigIssue] = []
        for side in SIDES:
            for client in CLIENT_TYPES:
                role = (side, client)
                settings = self._role_settings(f"{source}->{target}", source, target, side, client)
                issues: list[ConfigIssue] = []
                clients[role] = ClientSettings(translate(settings, client, issues))
                java[role] = ClientSettings(
                    {s.name: s for s in settings if s.name in JAVA_CLIENT_SETTINGS}
                )
                (self.issues.errors if role in checked else unchecked).extend(issues)
        return clients, java, tuple(unique_issues(unchecked))

    def cluster(self, alias: str) -> ClusterConfig:
        """A cluster's clients outside any flow; problems are errors if it has bootstrap servers."""
        clients: dict[ClientType, ClientSettings] = {}
        issues: list[ConfigIssue] = []
        for client in CLIENT_TYPES:
            settings = self._role_settings(alias, alias, alias, None, client)
            clients[client] = ClientSettings(translate(settings, client, issues))
        if clients["admin"].get("bootstrap.servers") is not None:
            self.issues.errors.extend(issues)
            return ClusterConfig(alias, clients)
        return ClusterConfig(alias, clients, tuple(unique_issues(issues)))

    def _role_settings(
        self,
        label: str,
        source: str | None,
        target: str | None,
        side: Side | None,
        client: ClientType,
    ) -> list[Setting[str]]:
        """The winning Java/librdkafka-named settings of a role, weakest first."""
        winners: dict[str, tuple[Rank, Setting[str]]] = {}
        for name, value in role_defaults(label, side, client).items():
            winners[name] = ((0, 0, 0), Setting(name, value, value))
        for rank, entry in client_candidates(self.entries, source, target, side, client):
            name = entry.placement.name
            if name not in winners or rank > winners[name][0]:
                value = entry.text.strip()
                winners[name] = (rank, Setting(name, value, value, entry.origin, entry.secret))
        for name, value in forced_settings(side, client).items():
            current = winners.get(name)
            if current is not None and current[1].value.strip().lower() != value:
                self.issues.warn(
                    f"ignored: Mirrorline always sets {name}={value} for this client",
                    current[1].origin,
                )
            winners[name] = ((9, 9, 0), Setting(name, value, value, Origin.forced()))
        return [s for _, s in sorted(winners.values(), key=lambda pair: pair[0])]
