"""Authenticating a request's Authorization header, and the role every route requires."""

from __future__ import annotations

import base64
import os
import time

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.requests import Request

from mirrorline.config import parse_config
from mirrorline.config.service_settings import ServiceSettings
from mirrorline.service.api import build_app
from mirrorline.service.auth import (
    ANONYMOUS,
    Authenticator,
    Forbidden,
    Principal,
    Unauthenticated,
    require,
)
from mirrorline.service.credentials import Entry, hash_password, hash_token, save_entry
from mirrorline.service.monitor import Monitor
from mirrorline.service.remote import RemoteServices, ServiceAd

PASSWORD = "s3cret-pa55word"
TOKEN = "mlt_unit-test-token"


def basic(name: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()


@pytest.fixture
def files(tmp_path):
    users, tokens = tmp_path / "users", tmp_path / "tokens"
    save_entry(users, "users", Entry("alice", "operator", hash_password(PASSWORD)))
    save_entry(users, "users", Entry("bob", "viewer", hash_password(PASSWORD + "b")))
    save_entry(tokens, "tokens", Entry("prometheus", "viewer", hash_token(TOKEN)))
    return users, tokens


def test_basic_credentials_prove_a_user_and_their_role(files):
    auth = Authenticator(*files)
    assert auth.authenticate(basic("alice", PASSWORD)) == Principal("alice", "operator", "basic")
    assert auth.authenticate(basic("bob", PASSWORD + "b")).role == "viewer"
    assert auth.authenticate(basic("alice", PASSWORD)).name == "alice"  # remembered
    assert auth.authenticate("basic " + basic("alice", PASSWORD)[6:]).name == "alice"


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (None, "authentication required"),
        ("", "authentication required"),
        (basic("alice", "wrong"), "wrong user name or password"),
        (basic("mallory", PASSWORD), "wrong user name or password"),
        ("Basic !!!", "malformed basic credentials"),
        ("Basic " + base64.b64encode(b"no-colon").decode(), "malformed basic credentials"),
        ("Bearer mlt_wrong", "unknown token"),
        ("Digest username=alice", "unsupported authorization scheme: use Basic or Bearer"),
    ],
)
def test_anything_else_is_refused_without_quoting_it(files, header, reason):
    with pytest.raises(Unauthenticated) as raised:
        Authenticator(*files).authenticate(header)
    assert str(raised.value) == reason


def test_a_bearer_token_proves_its_principal(files):
    assert Authenticator(*files).authenticate(f"Bearer {TOKEN}") == Principal(
        "prometheus", "viewer", "bearer"
    )


def test_only_the_schemes_configured_are_accepted_and_challenged(files):
    users, tokens = files
    only_users = Authenticator(users, None)
    assert only_users.challenges == ['Basic realm="Mirrorline", charset="UTF-8"']
    with pytest.raises(Unauthenticated, match="use Basic$"):
        only_users.authenticate(f"Bearer {TOKEN}")
    only_tokens = Authenticator(None, tokens)
    assert only_tokens.challenges == ['Bearer realm="Mirrorline"']
    with pytest.raises(Unauthenticated, match="use Bearer$"):
        only_tokens.authenticate(basic("alice", PASSWORD))


def test_a_changed_file_is_read_again_and_a_broken_one_keeps_the_last(files, monkeypatch):
    users, _ = files
    auth = Authenticator(users, None)
    assert auth.authenticate(basic("alice", PASSWORD)).role == "operator"
    monkeypatch.setattr("mirrorline.service.auth.RELOAD_CHECK_S", 0.0)
    save_entry(users, "users", Entry("alice", "viewer", hash_password("new-password")))
    _touch_later(users)
    with pytest.raises(Unauthenticated):
        auth.authenticate(basic("alice", PASSWORD))  # the old password no longer works
    assert auth.authenticate(basic("alice", "new-password")).role == "viewer"
    users.write_text("alice:viewer\n")
    _touch_later(users)
    assert auth.authenticate(basic("alice", "new-password")).role == "viewer"


def _touch_later(path) -> None:
    later = time.time_ns() + 2_000_000_000
    os.utime(path, ns=(later, later))


def _request(app: FastAPI, principal: Principal | None) -> Request:
    state = {"principal": principal} if principal is not None else {}
    return Request({"type": "http", "app": app, "state": state, "headers": []})


def test_require_lets_roles_that_grant_it_through_and_answers_403_otherwise(files):
    app = FastAPI()
    app.state.authenticator = Authenticator(*files)
    viewer, operator = Principal("bob", "viewer", "basic"), Principal("alice", "operator", "basic")
    assert require("viewer")(_request(app, viewer)) == viewer
    assert require("viewer")(_request(app, operator)) == operator
    assert require("operator")(_request(app, operator)) == operator
    with pytest.raises(Forbidden, match="bob has the viewer role; this needs the operator role"):
        require("operator")(_request(app, viewer))
    with pytest.raises(Unauthenticated):
        require("viewer")(_request(app, None))


def test_without_authentication_everybody_passes():
    app = FastAPI()
    app.state.authenticator = None
    assert require("operator")(_request(app, None)) == ANONYMOUS


def test_every_api_route_of_the_service_requires_a_role():
    config = parse_config(
        "clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:1\n"
        "a->b.enabled = true\n"
    )
    monitor = Monitor(config, ServiceSettings.of(config))  # not started: no cluster is asked
    remote = RemoteServices(
        ServiceAd("s", "http", "h", 1, "", ("b",)), advertise_in={}, discover_in={}
    )
    try:
        app = build_app(monitor, remote)
        routes = [r for r in app.routes if isinstance(r, APIRoute)]
        assert len(routes) >= 10
        for route in routes:
            names = [d.call.__name__ for d in route.dependant.dependencies if d.call]
            assert "require_viewer" in names, f"{route.path} requires no role"
    finally:
        monitor.close()
