"""A protected service: HTTPS verified against its CA, basic and bearer authentication on every
route, gateways that reach it with the right credentials and report it unreachable with the
wrong ones, and no secret in any log (real clusters; no driver needed)."""

from __future__ import annotations

import http.client
import json
import logging
import ssl
import urllib.error

import pytest

from mirrorline.config import load_config
from mirrorline.service.credentials import new_token
from mirrorline.service.server import Service
from support.service import (
    Caller,
    Protection,
    fetch,
    get,
    get_ok,
    own_aliases,
    running_service,
    write_aliased_config,
)
from support.wait import wait_until

PASSWORD = "alice-pa55word"
GATEWAY_PASSWORD = "gateway-pa55word"
EVERY_KIND_OF_ROUTE = (
    "/v2/replications",
    "/v2/windows",
    "/health",
    "/metrics",
    "/",
    "/ui/index.html",
    "/openapi.json",
    "/docs",
)
CHALLENGES = ['Basic realm="Mirrorline", charset="UTF-8"', 'Bearer realm="Mirrorline"']


def test_only_authenticated_callers_get_answers_over_verified_https(two_clusters, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    east, west = two_clusters
    src, dst = own_aliases("src", "dst")
    protection = Protection(tmp_path / "protection")
    alice = protection.add_user("alice", PASSWORD)
    token = new_token()
    prometheus = protection.add_token("prometheus", token)
    anybody = protection.caller
    config = write_aliased_config(
        tmp_path / "service.properties",
        {src: east, dst: west},
        f"{src}->{dst}.enabled = true\n" + protection.settings(),
    )
    with running_service(config) as service:
        assert service.url.startswith("https://127.0.0.1:")
        assert service.remote.own.protocol == "https"
        for path in EVERY_KIND_OF_ROUTE:
            status, headers, body = fetch(service.url + path, anybody)
            assert status == 401, path
            assert headers["www-authenticate"] == CHALLENGES, path
            assert json.loads(body)["error"] == "authentication required", path

        replications = service.url + "/v2/replications"
        for wrong, reason in (
            (anybody.with_user("alice", "not-" + PASSWORD), "wrong user name or password"),
            (anybody.with_user("mallory", PASSWORD), "wrong user name or password"),
            (anybody.with_token(token + "x"), "unknown token"),
        ):
            status, headers, body = fetch(replications, wrong)
            assert status == 401 and json.loads(body)["error"] == reason
            assert headers["www-authenticate"] == CHALLENGES

        doc = get_ok(replications, alice)
        assert (src, dst) in {(r["source"], r["target"]) for r in doc["replications"]}
        assert doc["services"][0]["url"].startswith("https://")
        for path in EVERY_KIND_OF_ROUTE:
            status, _, _ = fetch(service.url + path, alice)
            assert status == 200, path
        # The bearer caller sees the same flows (their state may have moved on meanwhile: the
        # collector reads the clusters while the test runs).
        flows = [(r["source"], r["target"]) for r in doc["replications"]]
        seen = get_ok(replications, prometheus)["replications"]
        assert [(r["source"], r["target"]) for r in seen] == flows
        status, _, metrics = fetch(service.url + "/metrics", prometheus)
        assert status == 200 and b"mirrorline_" in metrics

        # The certificate is checked: a client that does not trust the CA refuses it, and
        # plain HTTP gets no answer.
        with pytest.raises(urllib.error.URLError) as refused:
            fetch(replications, Caller(user=("alice", PASSWORD)))
        assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)
        with pytest.raises((OSError, http.client.HTTPException)):
            fetch(replications.replace("https://", "http://"), alice)

    assert "refused basic credentials from 127.0.0.1" in caplog.text
    assert "refused bearer credentials from 127.0.0.1" in caplog.text
    for secret in (PASSWORD, token, "mallory"):
        assert secret not in caplog.text


def test_gateways_reach_a_protected_remote_only_with_the_right_credentials(two_clusters, tmp_path):
    east, west = two_clusters
    src, far = own_aliases("src", "far")
    clusters = {src: east, far: west}
    flow = f"{src}->{far}.enabled = true\n"
    protection = Protection(tmp_path / "protection")
    protection.add_user("gateway", GATEWAY_PASSWORD)
    remote_config = write_aliased_config(
        tmp_path / "remote.properties",
        clusters,
        flow + f"service.clusters = {far}\n" + protection.settings(),
    )

    def gateway_config(name: str, password: str):
        return write_aliased_config(
            tmp_path / f"{name}.properties",
            clusters,
            flow + f"service.clusters = {src}\nservice.remote.clusters = {far}\n"
            f"service.remote.auth.username = gateway\nservice.remote.auth.password = {password}\n"
            f"service.remote.tls.ca = {protection.directory / 'ca.pem'}\n",
        )

    with (
        running_service(remote_config) as remote,
        running_service(gateway_config("gateway", GATEWAY_PASSWORD)) as gateway,
        running_service(gateway_config("intruder", "not-" + GATEWAY_PASSWORD)) as intruder,
    ):
        remote_id = remote.remote.own.id
        assert remote_id.startswith("mirrorline-service@127.0.0.1:")

        def listed(service: Service):
            doc = get_ok(f"{service.url}/v2/replications")
            services = {s["id"]: s for s in doc["services"]}
            return (doc, services[remote_id]) if remote_id in services else None

        doc, answered = wait_until(
            lambda: listed(gateway), timeout=60, what="the gateway to find the remote service"
        )
        assert answered["reachable"] is True and answered["url"].startswith("https://")
        found = {(r["source"], r["target"]): r for r in doc["replications"]}
        assert found[(src, far)]["served_by"] == remote_id
        assert not found[(src, far)]["unreachable"]
        one = get_ok(f"{gateway.url}/v2/replications/{src}/{far}")  # forwarded, authenticated
        assert (one["source"], one["target"], one["served_by"]) == (src, far, remote_id)

        doc, refused = wait_until(
            lambda: listed(intruder), timeout=60, what="the intruder to find the remote service"
        )
        assert refused["reachable"] is False
        assert "refused the credentials (HTTP 401)" in refused["error"]
        assert (src, far) not in {(r["source"], r["target"]) for r in doc["replications"]}
        status, error = get(f"{intruder.url}/v2/replications/{src}/{far}")
        assert status == 503 and "refused the credentials (HTTP 401)" in error["error"]
        assert GATEWAY_PASSWORD not in json.dumps(doc) + json.dumps(error)


def test_a_service_open_to_the_network_says_so(two_clusters, tmp_path, caplog):
    east, west = two_clusters
    src, dst = own_aliases("src", "dst")
    protection = Protection(tmp_path / "protection")
    protection.add_user("alice", PASSWORD)
    body = f"{src}->{dst}.enabled = true\n"
    open_config = write_aliased_config(tmp_path / "open.properties", {src: east, dst: west}, body)
    clear_config = write_aliased_config(
        tmp_path / "clear.properties", {src: east, dst: west}, body + protection.settings(tls=False)
    )
    for config, expected in (
        (open_config, "WITHOUT AUTHENTICATION"),
        (clear_config, "passwords and tokens cross the network in clear text"),
    ):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            Service(load_config(config), host="0.0.0.0").close()
            Service(load_config(config), host="127.0.0.1").close()
        warned = [r for r in caplog.records if expected in r.getMessage()]
        assert len(warned) == 1, caplog.text  # for 0.0.0.0, not for the loopback address
        assert "0.0.0.0:6670" in warned[0].getMessage()
