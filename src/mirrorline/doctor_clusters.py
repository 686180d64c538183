"""`mirrorline doctor`'s questions to the clusters of a configuration.

Every cluster an enabled flow uses is asked for its metadata, logged in as the
flows' own client settings do, within `timeout` seconds (`ClusterAccess`).
Clusters are asked at once, so that a few clusters that do not answer cost one
timeout, not one each. A request that fails only says "transport failure";
the cause is in librdkafka's connection reports (`ClusterAccess.last_error`),
which `cause_of` sorts into wrong credentials, an untrusted certificate, or no
answer at all, each with its own fix.

A cluster that answers is then asked what its principal may do, the way a
running flow asks (`engine.access`): the authorized operations of the topics
the flows use there, topics that do not exist yet skipped, compared with
what `mirrorline acls` lists for that cluster. The cluster resource, which
ACL sync needs, is asked with DescribeCluster. Groups and transactional ids
have no such question in Kafka's protocol: their ACLs stay for `mirrorline
acls` to list. A cluster without an authorizer allows everything, and says so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Literal

from confluent_kafka import KafkaError, KafkaException

from mirrorline.cluster_access import ClusterAccess, Unreachable
from mirrorline.config.model import SIDES, ClientSettings, FlowConfig, MirrorConfig, Side
from mirrorline.config.redact import REDACTED
from mirrorline.doctor import Finding
from mirrorline.engine.access import Denied, denied_topics, flow_topics
from mirrorline.kafka import enum_name
from mirrorline.permissions import Grant, heartbeat_grants, merged, required_grants
from mirrorline.text import counted

__all__ = ["Cause", "acl_problems", "cause_of", "check_clusters", "connection_problem"]

Cause = Literal["settings", "authentication", "tls", "unreachable"]

# librdkafka starts its reports with the broker (`sasl_ssl://host:port/bootstrap: `)
# and ends them with its state machine's timing; neither helps the reader.
_BROKER_PREFIX = re.compile(r"^\S+/(?:bootstrap|\d+): ")
_TIMING = re.compile(r" \(after \d+ms in state \w+\)$")
_FILE_SETTING = re.compile(r"\b(ssl\.[a-z.]+\.location)\b")
# librdkafka quotes a value it refuses; it could be one the configuration keeps secret.
_QUOTED_VALUE = re.compile(r'value "[^"]*"')


def check_clusters(config: MirrorConfig, timeout: float) -> list[Finding]:
    """Every cluster the enabled flows use: reachable, then what its principal may do."""
    uses = _uses(config)
    if not uses:
        cause = f"{config.file} enables no flow: no cluster to check"
        fix = "enable one with `SOURCE->TARGET.enabled = true`"
        return [Finding.problem("config", cause, fix, "warning")]
    flows = ", ".join(f.name for f in config.enabled_flows())
    found = [Finding("config", True, f"{config.file}: enabled flows {flows}")]
    accesses = [
        ClusterAccess(u.alias, admin=u.admin, consumer=u.consumer, timeout=timeout) for u in uses
    ]
    try:
        with ThreadPoolExecutor(max_workers=len(uses)) as pool:
            answers = list(pool.map(_connect, uses, accesses))
        for use, access, answer in zip(uses, accesses, answers, strict=True):
            found.append(answer)
            if use.topics is not None:
                found += _acls(config, use, uses, access, timeout)
    finally:
        for access in accesses:
            access.close()
    return found


# --- connecting ---------------------------------------------------------------------------


def cause_of(code: str | None, text: str) -> Cause:
    """What librdkafka's report (error `code` name, `text`) says stops the connection."""
    reason = reported(text).lower()
    if code == "_INVALID_ARG" or reason.startswith("failed to create"):
        return "settings"  # librdkafka refused them before connecting
    if code in ("_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED") or "authentication" in reason:
        return "authentication"
    if code == "_SSL" or "ssl handshake" in reason or "certificate" in reason:
        return "tls"
    return "unreachable"


def reported(text: str) -> str:
    """librdkafka's report without its broker prefix and state timing."""
    return _TIMING.sub("", _BROKER_PREFIX.sub("", text.strip()))


def connection_problem(
    alias: str,
    servers: str,
    settings: ClientSettings,
    error: tuple[str | None, str] | None,
    timeout: float,
) -> Finding:
    """The problem of a cluster that did not answer, from librdkafka's last report `error`
    (error code name, text).

    `servers` is how the bootstrap servers may be shown; when they are hidden,
    so is librdkafka's report, which names broker addresses.
    """
    code, text = error or (None, "")
    cause = cause_of(code, text)
    check = f"cluster {alias}"
    if cause == "authentication":
        user = _user(settings) or "the configured user"
        where = _where(settings, "sasl.password", "sasl.username")
        detail = f"{alias}: authentication failed for {user}"
        return Finding(check, False, detail, f"check sasl.jaas.config / the password in {where}")
    reason = reported(text) if servers != REDACTED else ""
    if cause == "settings":
        refused = _QUOTED_VALUE.sub("value", reported(text))
        detail = f"{alias}: librdkafka refuses the client settings: {refused}"
        fix = f"correct the {alias} setting it names (`mirrorline config check` shows its origin)"
        named = _FILE_SETTING.search(refused)
        if named and named.group(1) in settings and not _readable(settings[named.group(1)]):
            where = _where(settings, named.group(1))
            detail = f"{alias}: the file of {named.group(1)} cannot be read"
            fix = f"correct the path set at {where}, or the file's permissions"
        return Finding(check, False, detail, fix)
    if cause == "tls":
        untrusted = "certificate verify failed" in text.lower()
        why = "the brokers' certificate is not trusted" if untrusted else reason
        detail = f"{alias}: TLS with {servers} failed: {why or 'handshake refused'}"
        fix = (
            f"set {alias}.ssl.truststore.location (or ssl.ca.location) to the CA that signed "
            f"the brokers' certificates (now: {_where(settings, 'ssl.ca.location', 'ssl.ca.pem')})"
        )
        return Finding(check, False, detail, fix)
    detail = f"{alias}: no broker answers at {servers} within {timeout:g}s"
    if reason and code != "_ALL_BROKERS_DOWN":
        detail += f" ({reason})"
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    fix = (
        f"check {alias}.bootstrap.servers, the network, and that the brokers run "
        f"(with a {protocol} listener)"
    )
    return Finding(check, False, detail, fix)


def _readable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.R_OK)


def _user(settings: ClientSettings) -> str:
    for name in ("sasl.username", "sasl.kerberos.principal", "sasl.oauthbearer.client.id"):
        if settings.get(name):
            return str(settings[name])
    return ""


def _where(settings: ClientSettings, *names: str) -> str:
    """Where the first of `names` that is set comes from (file:line and key)."""
    for name in names:
        if name in settings:
            return str(settings.setting(name).origin)
    return "not set"


@dataclass
class _Use:
    """One cluster as one set of client settings logs in to it, and the flows that do."""

    alias: str
    admin: ClientSettings
    consumer: ClientSettings
    flows: list[tuple[FlowConfig, Side]] = field(default_factory=list)
    label: str = ""
    topics: dict[str, int] | None = None  # what it showed; None: it did not answer

    @property
    def principal(self) -> str:
        user = self.admin.get("sasl.username")
        return f"User:{user}" if user else ""


def _uses(config: MirrorConfig) -> list[_Use]:
    """The clusters of the enabled flows, once per distinct login (usually once each)."""
    by_key: dict[tuple[str, tuple[tuple[str, str], ...]], _Use] = {}
    for flow in config.enabled_flows():
        for side in SIDES:
            alias = flow.source if side == "source" else flow.target
            admin = flow.client_settings(side, "admin")
            consumer = flow.client_settings(side, "consumer")
            key = (alias, tuple(sorted(admin.items())))
            by_key.setdefault(key, _Use(alias, admin, consumer)).flows.append((flow, side))
    uses = list(by_key.values())
    for use in uses:
        flow, side = use.flows[0]
        several = sum(u.alias == use.alias for u in uses) > 1
        use.label = f"{use.alias} (as {flow.name}'s {side})" if several else use.alias
    return uses


def _connect(use: _Use, access: ClusterAccess) -> Finding:
    try:
        use.topics = access.topics()
    except Unreachable as exc:
        error = access.last_error
        # No report: the client was refused before connecting (`ClusterAccess` says why).
        unsent = (None, str(exc).split("does not answer: ", 1)[-1])
        report = (error.name(), error.str()) if error is not None else unsent
        problem = connection_problem(use.alias, access.servers, use.admin, report, access.timeout)
        return replace(problem, check=f"cluster {use.label}")
    who = f" as {use.principal}" if use.principal else ""
    detail = f"{access.servers} answers{who} ({counted(len(use.topics), 'topic')} visible)"
    return Finding(f"cluster {use.label}", True, detail)


# --- ACLs ---------------------------------------------------------------------------------


def acl_problems(
    label: str, denied: Sequence[Denied], grants: Sequence[Grant], principal: str
) -> list[Finding]:
    """One problem per grant of `grants` and the operations denied of it.

    Several topics under one prefix missing the same operations need one grant,
    so they are one line, naming the topics the denial was seen on.
    """
    seen: dict[tuple[Grant, tuple[str, ...]], list[str]] = {}
    for denial in denied:
        left = list(denial.operations)
        for grant in grants:
            if grant.cluster != denial.cluster or not grant.covers("TOPIC", denial.topic):
                continue
            operations = tuple(op for op in left if op in grant.operations)
            if operations:
                seen.setdefault((grant, operations), []).append(denial.topic)
                left = [op for op in left if op not in operations]
    return [
        _acl_problem(label, replace(grant, operations=operations), principal, topics)
        for (grant, operations), topics in seen.items()
    ]


def _acl_problem(label: str, grant: Grant, principal: str, topics: Sequence[str]) -> Finding:
    more = ", ..." if len(topics) > 3 else ""
    named = grant.pattern == "LITERAL" and grant.name != "*"  # the topic itself
    seen = f"; seen on {', '.join(topics[:3])}{more}" if topics and not named else ""
    detail = (
        f"{grant.cluster} denies {', '.join(grant.operations)} on {_resource(grant)} to "
        f"{principal or 'the configured principal'} (needed for: {grant.why}{seen})"
    )
    fix = grant.kafka_acls_command(principal or "User:<name>")
    return Finding(f"acls {label}", False, detail, fix)


def _resource(grant: Grant) -> str:
    if grant.resource == "CLUSTER":
        return "the cluster"
    kind = grant.resource.lower().replace("_", " ")
    if grant.pattern == "PREFIXED":
        return f"{kind}s prefixed {grant.name}"
    return f"all {kind}s" if grant.name == "*" else f"{kind} {grant.name}"


def _acls(
    config: MirrorConfig, use: _Use, uses: Sequence[_Use], access: ClusterAccess, timeout: float
) -> list[Finding]:
    """What the cluster denies of the ACLs `mirrorline acls` lists for it."""
    alias, check = use.alias, f"acls {use.label}"
    heartbeats = [g for f in config.heartbeat_flows() for g in heartbeat_grants(f)]
    grants = merged([g for f, _ in use.flows for g in required_grants(f)] + heartbeats)
    mine = [g for g in grants if g.cluster == alias]
    topics = {g.name for g in heartbeats if g.cluster == alias}
    for flow, _ in use.flows:
        topics |= flow_topics(flow, _ready(flow, uses)).get(alias, set())
    try:
        denied = denied_topics(access.clients(), alias, topics, mine, timeout)
        cluster = _cluster_operations(access, mine, timeout)
    except (KafkaException, TimeoutError) as exc:
        error = exc.args[0] if exc.args else None
        reason = reported(error.str()) if isinstance(error, KafkaError) else str(exc)
        detail = f"{alias} did not say what {use.principal or 'the principal'} may do: {reason}"
        fix = f"run again; `mirrorline acls --config {config.file}` lists what to grant"
        return [Finding(check, False, detail, fix)]
    problems = acl_problems(use.label, denied, mine, use.principal)
    for grant in (g for g in mine if g.resource == "CLUSTER"):
        missing = tuple(op for op in grant.operations if op not in (cluster or set()))
        if missing:
            lacking = replace(grant, operations=missing)
            problems.append(_acl_problem(use.label, lacking, use.principal, ()))
    if problems:
        return problems
    asked = counted(len(topics), "topic") + (" and the cluster" if cluster is not None else "")
    detail = f"nothing denied on {asked} (groups and transactional ids cannot be asked)"
    return [Finding(check, True, detail)]


def _ready(flow: FlowConfig, uses: Sequence[_Use]) -> set[str]:
    """The source topics `flow` replicates: those its source shows and those it names."""
    source = (u for u in uses if any(f is flow and s == "source" for f, s in u.flows))
    shown = next(source).topics or {}
    named = {
        g.name
        for g in required_grants(flow)
        if g.cluster == flow.source and g.resource == "TOPIC" and g.pattern == "LITERAL"
    }
    return {t for t in (set(shown) | named) - {"*"} if flow.should_replicate_topic(t)}


def _cluster_operations(
    access: ClusterAccess, grants: Sequence[Grant], timeout: float
) -> set[str] | None:
    """What the principal may do on the cluster resource; None when no grant needs it."""
    if not any(g.resource == "CLUSTER" for g in grants):
        return None
    answer = access.admin.describe_cluster(
        include_authorized_operations=True, request_timeout=timeout
    ).result(timeout=timeout)
    # Without DESCRIBE on the cluster the brokers tell nothing: nothing is allowed.
    return {enum_name(op) for op in answer.authorized_operations or ()}
