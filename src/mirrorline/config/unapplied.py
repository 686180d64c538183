"""The MM2 settings Mirrorline does not apply: ignored with a warning, or refused.

An MM2 file also configures the Kafka Connect runtime MM2 runs on (workers,
REST, offset storage, converters, ...) and a few things Mirrorline decides for
itself. So that such a file loads unchanged, these settings are accepted and
ignored, each with a warning that says why (`IGNORED`, `IGNORED_PREFIXES`).
Ignoring is only safe for a setting that does not change what lands on the
target: key and value converters other than the one that copies bytes are
refused with an error instead (`converter_problem`, and `UNSUPPORTED_PREFIXES`
for whole families of settings), since ignoring them would copy other records
than MirrorMaker 2 does with the same file. Single message transforms and
`header.converter` are flow settings (`transforms`, `settings`).

The flow settings Mirrorline applies are in `settings`; the Java client
settings it ignores or refuses, in `clients`.
"""

from __future__ import annotations

__all__ = [
    "BYTE_ARRAY_CONVERTER",
    "IGNORED",
    "IGNORED_PREFIXES",
    "UNSUPPORTED_PREFIXES",
    "converter_problem",
    "ignored_reason",
    "unsupported",
]

_CONNECT = "a Kafka Connect runtime setting of MM2; Mirrorline does not run Connect"
_NO_EFFECT = "an MM2 setting accepted for compatibility; it has no effect in Mirrorline"

#: Settings accepted and ignored, with the reason shown in the warning.
IGNORED: dict[str, str] = {
    "config.providers": "config providers env, file and directory are always available",
    "dedicated.mode.enable.internal.rest": _CONNECT,
    "name": "a Kafka Connect connector setting; Mirrorline names flows SOURCE->TARGET",
    "connector.class": "a Kafka Connect connector setting; Mirrorline has no connectors",
    "source.cluster.alias": "aliases come from `clusters` and the flow's SOURCE->TARGET prefix",
    "target.cluster.alias": "aliases come from `clusters` and the flow's SOURCE->TARGET prefix",
    "plugin.discovery": _CONNECT,
    "listeners": _CONNECT,
    "scheduled.rebalance.max.delay.ms": _CONNECT,
    "connect.protocol": _CONNECT,
    "offset.flush.timeout.ms": _CONNECT,
    "offset.flush.interval.ms": _CONNECT,
    "heartbeat.interval.ms": _CONNECT + " (set consumer.heartbeat.interval.ms for consumers)",
    "session.timeout.ms": _CONNECT + " (set consumer.session.timeout.ms for consumers)",
    "rebalance.timeout.ms": _CONNECT,
    "metric.reporters": "Mirrorline reports metrics itself (REST, Prometheus)",
    "transaction.boundary": "Mirrorline decides transaction boundaries in exactly-once mode",
    "transaction.boundary.interval.ms": "Mirrorline decides transaction boundaries",
    "exactly.once.support": "use exactly.once.source.support",
    "errors.retry.timeout": "Mirrorline retries writes through the producer's own settings",
    "errors.retry.delay.max.ms": "Mirrorline retries writes through the producer's own settings",
    "errors.log.enable": "Mirrorline always logs records it cannot write",
    "errors.log.include.messages": "Mirrorline never logs record contents",
    "connect.start.task.timeout.ms": _CONNECT,
    "disable.source.topic.auto.creation": "Mirrorline never creates topics on the source",
    "copy.source.offset.in.header.enabled": "Mirrorline always records provenance in headers",
    "admin.timeout.ms": _NO_EFFECT + " (each of its admin requests has a timeout of its own)",
    "consumer.poll.timeout.ms": _NO_EFFECT
    + " (Spark's Kafka source reads the records, with its own poll timeout)",
}

#: Prefixes of settings accepted and ignored, with the reason shown in the warning.
IGNORED_PREFIXES: dict[str, str] = {
    "config.providers.": "config providers env, file and directory are always available",
    "offset.storage.": _CONNECT,
    "config.storage.": _CONNECT,
    "status.storage.": _CONNECT,
    "key.converter": _CONNECT,
    "value.converter": _CONNECT,
    "header.converter": _CONNECT,
    "task.": _CONNECT,
    "worker.": _CONNECT,
    "rest.": _CONNECT,
    "admin.listeners": _CONNECT,
    "listeners.": _CONNECT,
    "metrics.": "Mirrorline reports metrics itself (REST, Prometheus)",
    "mm.": "a Streams Replication Manager service setting",
    "tasks.max.": _CONNECT,
}


#: Prefixes of MM2 settings that Mirrorline does not apply and that change what lands
#: on the target: errors, never ignored. (what is wrong, what to do)
UNSUPPORTED_PREFIXES: dict[str, tuple[str, str]] = {}

#: The converter that copies bytes as they are: the only one whose effect Mirrorline has.
BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
_CONVERTERS = ("key.converter", "value.converter")


def converter_problem(name: str, value: str) -> tuple[str, str] | None:
    """(what is wrong, what to do) for an MM2 converter other than the byte-copying one."""
    if name not in _CONVERTERS or value.strip() == BYTE_ARRAY_CONVERTER:
        return None
    return (
        f"{value.strip()} would change the bytes MirrorMaker 2 copies; Mirrorline copies "
        "keys, values and headers as they are",
        f"remove the line or set {BYTE_ARRAY_CONVERTER}",
    )


def unsupported(name: str) -> tuple[str, str] | None:
    """(what is wrong, what to do) for a setting Mirrorline must refuse, else None."""
    for prefix, problem in UNSUPPORTED_PREFIXES.items():
        if name == prefix or name.startswith(prefix + "."):
            return problem
    return None


def ignored_reason(name: str) -> str | None:
    """Why a setting is ignored, or None if Mirrorline does not ignore it."""
    if name in IGNORED:
        return IGNORED[name]
    for prefix, reason in IGNORED_PREFIXES.items():
        if name.startswith(prefix):
            return reason
    return None
