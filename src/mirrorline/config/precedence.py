"""Which line of the file decides each setting: levels, prefixes and their ranking.

Every key in an MM2 file is a setting name behind zero or more prefixes.
Mirrorline reads the prefixes in this order and then ranks the candidates.

Levels (from SRM), weakest to strongest
---------------------------------------

1. **global**: no prefix (`offset.lag.max = 50`);
2. **workers**: `workers.` (`workers.offset.lag.max = 50`);
3. **connectors**: `connectors.` (`connectors.offset.lag.max = 50`);
4. **cluster**: a cluster alias listed in `clusters` (`B.offset.lag.max = 50`);
5. **flow** (SRM's *replication level*): `A->B.` (`A->B.offset.lag.max = 50`).

A more specific level always wins. `workers.` and `connectors.` both apply to
every flow; SRM separates Connect worker and connector settings with them,
Mirrorline has neither and accepts any setting at both, ranking connectors
above workers as Connect ranks a connector's overrides above its worker's.

*Flow settings* (`topics`, `offset.lag.max`, intervals, ...) of flow `A->B`
are read at the global, workers, connectors, flow levels and at the cluster
level of the flow's **target** `B`: SRM applies cluster-level settings to
the replications that write into that cluster. `A.topics` therefore shapes
the flows *into* A; use `A->B.topics` for one flow.

*Client settings* of flow `A->B` are chosen per client role: a side (the
`source` cluster A or the `target` cluster B) and a client type (`consumer`,
`producer`, `admin`). At the cluster level the alias is that of the side's
cluster (`A.` for source clients, `B.` for target clients). Inside one level
the most specific prefix wins (MM2's and SRM's client prefixes):

    producer.override.K  (target producer only; admin.override.K: target admin)
    > source.consumer.K, target.producer.K, ...   (side and type)
    > consumer.K, producer.K, admin.K             (type, both sides)
    > source.cluster.K, target.cluster.K          (side, every type)
    > K                                           (every client it applies to)

At the cluster level only `A.K` and `A.consumer.K` (and `producer.`,
`admin.`) exist. A plain client setting at the flow level (`A->B.linger.ms`)
is an error: it cannot say which cluster it is for. A plain setting applies
only to the client types it belongs to (`linger.ms` to producers).

Defaults, forced values and the engine's batch size
---------------------------------------------------

Mirrorline's defaults for client roles (`client.id`, consumer `group.id`,
`auto.offset.reset`, the source consumer's `isolation.level`, producer
`acks`, the target producer's idempotence) are weaker than any line of the
file; `enable.auto.commit=false` for consumers is forced. `max.poll.records`
is a flow setting that may also be written as a source consumer setting
(`A->B.consumer.max.poll.records`); both forms compete by the rules above.

Ties and old names
------------------

Within one level and one prefix, a current name beats an old one
(`topics.exclude` over `topics.blacklist`), and if the same key is written
twice the later line wins, as in Java (with a warning). What is not set
anywhere takes its default, shown as `default` in `mirrorline config check`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from mirrorline.config.clients import client_types, is_client_setting
from mirrorline.config.model import CLIENT_TYPES, ClientType, Side
from mirrorline.config.service_settings import PREFIX as SERVICE_PREFIX
from mirrorline.config.service_settings import SERVICE_SETTINGS
from mirrorline.config.settings import FLOW_SETTINGS, LEGACY_NAMES
from mirrorline.config.transforms import is_transform_key
from mirrorline.config.unapplied import ignored_reason, unsupported

__all__ = ["UNKNOWN", "ClientSelector", "KeyProblem", "Level", "Placement", "classify"]

_SIDES: tuple[Side, ...] = ("source", "target")


class Level(IntEnum):
    """Configuration levels, weakest first."""

    GLOBAL = 1
    WORKERS = 2
    CONNECTORS = 3
    CLUSTER = 4
    FLOW = 5


@dataclass(frozen=True)
class ClientSelector:
    """Which client roles a client-setting key is for, from its prefix."""

    side: Side | None = None
    client: ClientType | None = None
    override: bool = False

    @property
    def specificity(self) -> int:
        """Rank inside a level: the more a prefix narrows the roles, the stronger."""
        if self.override:
            return 4
        if self.side and self.client:
            return 3
        if self.client:
            return 2
        if self.side:
            return 1
        return 0

    def selects(self, side: Side | None, client: ClientType) -> bool:
        """True if the key's prefix covers the role (`side=None`: outside any flow)."""
        if self.side is not None and self.side != side:
            return False
        return self.client is None or self.client == client


PlacementKind = Literal["clusters", "flow", "client", "policy", "smt", "service", "ignored"]


#: The note of a key Mirrorline does not know (at the flow level, passed on to the flow's
#: Java classes, as MM2 passes a flow's every line to its connectors).
UNKNOWN = "not a setting Mirrorline knows; check the spelling"


@dataclass(frozen=True)
class Placement:
    """What a key means: its level, scope, kind and bare setting name."""

    level: Level
    kind: PlacementKind
    name: str
    cluster: str | None = None
    flow: tuple[str, str] | None = None
    selector: ClientSelector | None = None
    legacy: bool = False
    note: str = ""


@dataclass(frozen=True)
class KeyProblem:
    """A key that cannot be placed: what is wrong and what to do."""

    message: str
    hint: str


def classify(key: str, aliases: Sequence[str]) -> Placement | KeyProblem:
    """Place one key of the file, knowing the cluster aliases."""
    if key == "clusters":
        return Placement(Level.GLOBAL, "clusters", key)
    if key.startswith(SERVICE_PREFIX) and SERVICE_PREFIX[:-1] not in aliases:
        if key not in SERVICE_SETTINGS:
            return KeyProblem(
                f"unknown service setting {key!r}",
                f"service settings are {', '.join(SERVICE_SETTINGS)}",
            )
        return Placement(Level.GLOBAL, "service", key)
    if key in FLOW_SETTINGS or key in LEGACY_NAMES:
        return _within(key, Level.GLOBAL, None, None, aliases)
    for prefix, level in (("workers.", Level.WORKERS), ("connectors.", Level.CONNECTORS)):
        if key.startswith(prefix):
            return _within(key[len(prefix) :], level, None, None, aliases)
    if "->" in key:
        return _flow_key(key, aliases)
    for alias in sorted(aliases, key=len, reverse=True):
        if key.startswith(alias + "."):
            return _within(key[len(alias) + 1 :], Level.CLUSTER, alias, None, aliases)
    return _within(key, Level.GLOBAL, None, None, aliases)


def _flow_key(key: str, aliases: Sequence[str]) -> Placement | KeyProblem:
    source, _, rest = key.partition("->")
    known = ", ".join(aliases)
    if source not in aliases:
        return KeyProblem(
            f"{source!r} is not a cluster alias",
            f"flows are written SOURCE->TARGET.setting with aliases listed in clusters ({known})",
        )
    for alias in sorted(aliases, key=len, reverse=True):
        if rest.startswith(alias + "."):
            if alias == source:
                return KeyProblem(
                    f"a flow from {source} to itself is not possible",
                    "a flow needs two different clusters",
                )
            return _within(rest[len(alias) + 1 :], Level.FLOW, None, (source, alias), aliases)
    if rest in aliases:
        return KeyProblem(
            "the setting name is missing", f"write e.g. {source}->{rest}.enabled = true"
        )
    target = rest.split(".", 1)[0]
    return KeyProblem(
        f"{target!r} is not a cluster alias",
        f"flows are written SOURCE->TARGET.setting with aliases listed in clusters ({known})",
    )


def _within(
    rest: str,
    level: Level,
    cluster: str | None,
    flow: tuple[str, str] | None,
    aliases: Sequence[str],
) -> Placement | KeyProblem:
    def place(
        kind: PlacementKind,
        name: str,
        *,
        selector: ClientSelector | None = None,
        legacy: bool = False,
        note: str = "",
    ) -> Placement:
        return Placement(level, kind, name, cluster, flow, selector, legacy, note)

    if rest in FLOW_SETTINGS:
        return place("flow", rest)
    if rest in LEGACY_NAMES:
        return place("flow", LEGACY_NAMES[rest], legacy=True)
    if rest == "clusters":
        return KeyProblem("clusters takes no prefix", "write it once, as `clusters = A, B`")
    if rest.startswith("replication.policy."):
        return place("policy", rest)
    if is_transform_key(rest):
        return place("smt", rest)
    refused = unsupported(rest)
    if refused is not None:
        return KeyProblem(*refused)
    reason = ignored_reason(rest)
    if reason is not None:
        return place("ignored", rest, note=reason)
    prefixed = _client_prefix(rest)
    if isinstance(prefixed, KeyProblem):
        return prefixed
    if prefixed is not None:
        selector, name = prefixed
        problem = _check_client_key(level, cluster, selector, name)
        if problem is not None:
            return problem
        return place("client", name, selector=selector, note=_wrong_type_note(selector, name))
    if is_client_setting(rest):
        if flow is not None:
            prefix = f"{flow[0]}->{flow[1]}"
            return KeyProblem(
                "a client setting at the flow level must say which clients it is for",
                f"write e.g. {prefix}.source.cluster.{rest}, {prefix}.target.cluster.{rest} "
                f"or {prefix}.consumer.{rest}",
            )
        return place("client", rest, selector=ClientSelector())
    if rest.startswith(("ssl.", "sasl.")):
        return _unknown_client_setting(rest)
    return _unknown(rest, level, aliases, cluster, flow)


def _check_client_key(
    level: Level, cluster: str | None, selector: ClientSelector, name: str
) -> KeyProblem | None:
    if level == Level.CLUSTER and (selector.side is not None or selector.override):
        return KeyProblem(
            "source./target./override prefixes do not apply to a single cluster",
            f"write {cluster}.consumer.{name}, {cluster}.producer.{name} or {cluster}.{name}",
        )
    if not is_client_setting(name):
        return _unknown_client_setting(name)
    return None


def _wrong_type_note(selector: ClientSelector, name: str) -> str:
    types = client_types(name) or frozenset()
    if selector.client is None or selector.client in types:
        return ""
    kinds = " and ".join(sorted(types))
    return f"{name} is a {kinds} setting; {selector.client} clients ignore it"


def _client_prefix(rest: str) -> tuple[ClientSelector, str] | KeyProblem | None:
    candidates: list[tuple[str, ClientSelector]] = [
        ("producer.override.", ClientSelector("target", "producer", override=True)),
        ("admin.override.", ClientSelector("target", "admin", override=True)),
    ]
    for side in _SIDES:
        candidates.append((f"{side}.cluster.", ClientSelector(side)))
        candidates.extend((f"{side}.{c}.", ClientSelector(side, c)) for c in CLIENT_TYPES)
    candidates.extend((f"{c}.", ClientSelector(None, c)) for c in CLIENT_TYPES)
    if rest.startswith("consumer.override."):
        return KeyProblem(
            "consumer.override. only applies to Kafka Connect sink connectors",
            "use consumer. or source.consumer. for the consumers that read records",
        )
    for prefix, selector in candidates:
        if rest.startswith(prefix):
            name = rest[len(prefix) :]
            if not name:
                return KeyProblem("the client setting name is missing", "write PREFIX.setting")
            return selector, name
    return None


def _unknown_client_setting(name: str) -> KeyProblem:
    return KeyProblem(
        f"unknown Kafka client setting {name!r}",
        "use a Java client setting of Apache Kafka or a librdkafka property",
    )


def _unknown(
    rest: str,
    level: Level,
    aliases: Sequence[str],
    cluster: str | None,
    flow: tuple[str, str] | None,
) -> Placement | KeyProblem:
    if level == Level.GLOBAL:
        head, _, tail = rest.partition(".")
        if tail and _known_suffix(tail):
            arrow = " (a flow is written SOURCE->TARGET, with '->')" if "-" in head else ""
            return KeyProblem(
                f"{head!r} is not a cluster alias listed in clusters{arrow}",
                f"known aliases: {', '.join(aliases) or 'none'}",
            )
    return Placement(level, "ignored", rest, cluster, flow, note=UNKNOWN)


def _known_suffix(tail: str) -> bool:
    if tail in FLOW_SETTINGS or tail in LEGACY_NAMES or is_client_setting(tail):
        return True
    prefixed = _client_prefix(tail)
    return isinstance(prefixed, tuple) and is_client_setting(prefixed[1])
