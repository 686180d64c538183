"""`mirrorline service passwd` and `mirrorline service token`, and the service refusing to start
on security settings it cannot use, each with a message and no stack trace."""

from __future__ import annotations

import stat

import pytest
from typer.testing import CliRunner

from mirrorline.certificates import CertificateAuthority, write_private
from mirrorline.cli.main import app
from mirrorline.service.credentials import read_entries, verify_password, verify_token

PASSWORD = "pa55word-from-stdin"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_passwd_reads_the_password_from_stdin_and_stores_its_hash(runner, tmp_path):
    users = tmp_path / "users"
    result = runner.invoke(
        app,
        ["service", "passwd", "alice", "-f", str(users), "--role", "operator", "--password-stdin"],
        input=PASSWORD + "\n",
    )
    assert result.exit_code == 0, result.output
    assert f"user alice (operator) added in {users}" in result.output
    entry = read_entries(users, "users")["alice"]
    assert entry.role == "operator" and verify_password(PASSWORD, entry.hash)
    assert PASSWORD not in users.read_text() and PASSWORD not in result.output
    assert stat.S_IMODE(users.stat().st_mode) == 0o600


def test_passwd_asks_twice_on_the_terminal(runner, tmp_path):
    users = tmp_path / "users"
    result = runner.invoke(
        app, ["service", "passwd", "bob", "-f", str(users)], input=f"{PASSWORD}\n{PASSWORD}\n"
    )
    assert result.exit_code == 0, result.output
    assert read_entries(users, "users")["bob"].role == "viewer"
    assert PASSWORD not in result.output


@pytest.mark.parametrize(
    ("arguments", "stdin", "message"),
    [
        (["alice", "--role", "admin"], PASSWORD, "role 'admin' is unknown: use viewer or operator"),
        (["al:ice"], PASSWORD, "'al:ice' cannot be a name"),
        (["alice"], "short", "shorter than 8 characters"),
        (["nobody", "--delete"], "", "no user nobody in"),
    ],
)
def test_passwd_mistakes_are_explained(runner, tmp_path, arguments, stdin, message):
    users = tmp_path / "users"
    result = runner.invoke(
        app,
        ["service", "passwd", *arguments, "-f", str(users), "--password-stdin"],
        input=stdin + "\n",
    )
    assert result.exit_code != 0 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_token_is_printed_once_and_only_its_hash_kept(runner, tmp_path):
    tokens = tmp_path / "tokens"
    result = runner.invoke(app, ["service", "token", "prometheus", "-f", str(tokens)])
    assert result.exit_code == 0, result.output
    token = result.stdout.strip().splitlines()[-1]
    assert token.startswith("mlt_") and token not in tokens.read_text()
    assert verify_token(token, read_entries(tokens, "tokens")["prometheus"].hash)
    revoked = runner.invoke(app, ["service", "token", "prometheus", "-f", str(tokens), "--delete"])
    assert revoked.exit_code == 0 and read_entries(tokens, "tokens") == {}


BASE = (
    "clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:1\n"
    "a->b.enabled = true\n"
)


def _serve(runner: CliRunner, tmp_path, body: str) -> tuple[int, str]:
    config = tmp_path / "mm2.properties"
    config.write_text(BASE + body)
    result = runner.invoke(app, ["service", "--config", str(config)])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_the_service_does_not_start_on_files_it_cannot_use(runner, tmp_path):
    code, output = _serve(runner, tmp_path, f"service.auth.users.file = {tmp_path}/missing\n")
    assert code == 2 and "cannot read the users file" in output
    assert "create it with mirrorline service passwd" in output

    (tmp_path / "users").write_text("alice:viewer:hunter2-in-clear\n")
    code, output = _serve(runner, tmp_path, "service.auth.users.file = users\n")
    assert code == 2 and f"{tmp_path / 'users'}:1: the hash of alice" in output
    assert "hunter2" not in output


def test_the_service_does_not_start_with_a_key_that_is_not_its_certificates(runner, tmp_path):
    authority = CertificateAuthority.create()
    (tmp_path / "service.pem").write_bytes(authority.issue("service").cert_pem)
    write_private(tmp_path / "other-key.pem", authority.issue("other").key_pem)
    code, output = _serve(
        runner,
        tmp_path,
        "service.tls.certificate = service.pem\nservice.tls.key = other-key.pem\n",
    )
    assert code == 2 and "service.tls.key: is not the key of service.tls.certificate" in output
    code, output = _serve(runner, tmp_path, "service.tls.certificate = service.pem\n")
    assert code == 2 and "service.tls.certificate: set without service.tls.key" in output
