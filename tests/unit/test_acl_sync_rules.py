"""Topic ACL sync's rules: what is copied, how it is renamed, and what a round changes."""

from __future__ import annotations

from mirrorline.config import parse_config
from mirrorline.control.acl_sync import TopicAcl, copies_of, plan

BASE = """clusters = A, B
A.bootstrap.servers = 127.0.0.1:1
B.bootstrap.servers = 127.0.0.1:2
A->B.enabled = true
"""


def _flow(extra: str = ""):
    return next(iter(parse_config(BASE + extra).enabled_flows()))


def acl(name, operation="READ", permission="ALLOW", pattern="LITERAL", principal="User:x"):
    return TopicAcl(pattern, name, principal, "*", operation, permission)


def test_read_is_copied_to_the_remote_name_and_write_never():
    copies = copies_of(
        [acl("orders"), acl("orders", "WRITE"), acl("orders", "DESCRIBE")], _flow(), {"orders"}
    )
    assert copies == {acl("A.orders"), acl("A.orders", "DESCRIBE")}


def test_allow_all_becomes_read_and_denies_are_copied_as_they_are():
    copies = copies_of(
        [acl("orders", "ALL"), acl("orders", "ALL", "DENY"), acl("orders", "WRITE", "DENY")],
        _flow(),
        {"orders"},
    )
    assert copies == {
        acl("A.orders", "READ"),
        acl("A.orders", "ALL", "DENY"),
        acl("A.orders", "WRITE", "DENY"),
    }


def test_only_replicated_topics_prefixes_and_the_wildcard_are_copied():
    source = [
        acl("orders"),
        acl("payroll"),  # not replicated
        acl("ord", pattern="PREFIXED"),
        acl("pay", pattern="PREFIXED"),  # no replicated topic starts with it
        acl("*"),
    ]
    copies = copies_of(source, _flow(), {"orders"})
    assert copies == {
        acl("A.orders"),
        acl("A.ord", pattern="PREFIXED"),
        acl("A.", pattern="PREFIXED"),
    }


def test_identity_policy_keeps_names_and_the_wildcard():
    flow = _flow("replication.policy.class = IdentityReplicationPolicy\n")
    assert copies_of([acl("orders"), acl("*")], flow, {"orders"}) == {acl("orders"), acl("*")}


def test_a_round_creates_what_is_missing_and_deletes_only_its_own_copies():
    wanted = {acl("A.orders"), acl("A.new")}
    operator_set = acl("A.orders", "DESCRIBE", principal="User:ops")
    gone = acl("A.orders", principal="User:left")
    on_target = {acl("A.orders"), operator_set, gone}
    step = plan(wanted, on_target, owned={acl("A.orders"), gone})
    assert step.create == {acl("A.new")}
    assert step.delete == {gone}
    assert step.owned == {acl("A.orders"), acl("A.new")}
    # An ACL the operator set on the target is never the flow's, wanted or not.
    assert plan(set(), {operator_set}, set()).delete == frozenset()


def test_an_existing_equal_acl_is_not_taken_over():
    existing = acl("A.orders")
    step = plan({existing}, {existing}, owned=set())
    assert step.create == frozenset() and step.owned == frozenset()
