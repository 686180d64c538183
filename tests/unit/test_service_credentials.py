"""The service's users and tokens files: hashing, reading with errors that name file and line
but never a hash or a password, and writing them back."""

from __future__ import annotations

import stat

import pytest

from mirrorline.service.credentials import (
    CredentialsFileError,
    Entry,
    grants,
    hash_password,
    hash_token,
    new_token,
    read_entries,
    remove_entry,
    save_entry,
    verify_password,
    verify_token,
)

PASSWORD = "correct horse battery"


def test_a_password_hash_is_salted_self_describing_and_verifies():
    first, second = hash_password(PASSWORD), hash_password(PASSWORD)
    assert first != second  # a salt of its own
    assert first.startswith("$scrypt$ln=15,r=8,p=1$") and PASSWORD not in first
    assert verify_password(PASSWORD, first) and verify_password(PASSWORD, second)
    assert not verify_password(PASSWORD + "!", first)
    assert not verify_password(PASSWORD, "$scrypt$garbage")


def test_a_hash_made_with_other_costs_still_verifies():
    import base64
    import hashlib

    salt = b"0123456789abcdef"
    digest = hashlib.scrypt(PASSWORD.encode(), salt=salt, n=2**12, r=4, p=1, dklen=32)
    encoded = "$scrypt$ln=12,r=4,p=1${}${}".format(
        *(base64.b64encode(x).decode().rstrip("=") for x in (salt, digest))
    )
    assert verify_password(PASSWORD, encoded)


def test_tokens_are_random_and_only_their_hash_verifies():
    token = new_token()
    assert token.startswith("mlt_") and len(token) > 40 and token != new_token()
    assert verify_token(token, hash_token(token))
    assert not verify_token(token + "x", hash_token(token))


def test_roles_grant_what_the_roles_before_them_grant():
    assert grants("operator", "viewer") and grants("operator", "operator")
    assert grants("viewer", "viewer") and not grants("viewer", "operator")


def test_a_users_file_with_comments_and_blank_lines_reads(tmp_path):
    hashed = hash_password(PASSWORD)
    path = tmp_path / "users"
    path.write_text(f"# who\n\nalice:operator:{hashed}\n  # more\nbob:viewer:{hashed}\n")
    entries = read_entries(path, "users")
    assert [(e.name, e.role) for e in entries.values()] == [
        ("alice", "operator"),
        ("bob", "viewer"),
    ]
    assert hashed not in repr(entries)


def test_every_mistake_is_reported_with_file_and_line_and_no_secret(tmp_path):
    hashed = hash_password(PASSWORD)
    path = tmp_path / "users"
    path.write_text(
        f"alice:viewer:{hashed}\n"
        "bob:hunter2-in-clear\n"  # a password where the role and hash go
        f"carol:admin:{hashed}\n"
        "dave:viewer:hunter3-in-clear\n"
        f"alice:operator:{hashed}\n"
        f"bad name:viewer:{hashed}\n"
        f"erin:viewer:{hash_token('x')}\n"  # a token's hash in the users file
    )
    with pytest.raises(CredentialsFileError) as raised:
        read_entries(path, "users", "service.auth.users.file")
    text = str(raised.value)
    assert f"users file {path} (service.auth.users.file)" in text
    assert "mirrorline service passwd" in text
    assert f"{path}:2: expected name:role:hash, found 2 fields" in text
    assert f"{path}:3: role 'admin' is unknown: use viewer or operator" in text
    assert f"{path}:4: the hash of dave is not a $scrypt$" in text
    assert f"{path}:5: alice is listed twice" in text
    assert f"{path}:6: 'bad name' cannot be a name" in text
    assert f"{path}:7: the hash of erin is not a $scrypt$" in text
    for secret in ("hunter2", "hunter3", hashed, hash_token("x")):
        assert secret not in text


def test_a_tokens_file_holds_sha256_hashes_only(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"prometheus:viewer:{hash_token('t')}\nci:operator:{hash_password('p' * 8)}\n")
    with pytest.raises(CredentialsFileError) as raised:
        read_entries(path, "tokens")
    assert f"{path}:2: the hash of ci is not a $sha256$ token hash" in str(raised.value)
    assert "mirrorline service token" in str(raised.value)


def test_a_missing_file_says_how_to_make_one(tmp_path):
    with pytest.raises(CredentialsFileError) as raised:
        read_entries(tmp_path / "nope", "users", "service.auth.users.file")
    text = str(raised.value)
    assert "cannot read the users file" in text and "No such file or directory" in text
    assert "create it with mirrorline service passwd" in text


def test_hash_costs_beyond_reason_are_refused(tmp_path):
    path = tmp_path / "users"
    greedy = hash_password(PASSWORD).replace("ln=15,r=8,", "ln=20,r=32,")
    path.write_text(f"alice:viewer:{greedy}\n")
    with pytest.raises(CredentialsFileError, match="scrypt costs out of range"):
        read_entries(path, "users")


def test_saving_creates_an_owner_only_file_replaces_and_removes(tmp_path):
    path = tmp_path / "users"
    assert save_entry(path, "users", Entry("alice", "viewer", hash_password("a" * 8))) is False
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().startswith("# Mirrorline service users")
    with path.open("a") as out:
        out.write("# kept\n")
    save_entry(path, "users", Entry("bob", "viewer", hash_password("b" * 8)))
    assert save_entry(path, "users", Entry("alice", "operator", hash_password("c" * 8))) is True
    entries = read_entries(path, "users")
    assert entries["alice"].role == "operator" and verify_password("c" * 8, entries["alice"].hash)
    assert "# kept" in path.read_text()
    assert remove_entry(path, "users", "bob") is True
    assert remove_entry(path, "users", "bob") is False
    assert list(read_entries(path, "users")) == ["alice"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_file_with_mistakes_is_not_rewritten(tmp_path):
    path = tmp_path / "users"
    path.write_text("alice:viewer\n")
    with pytest.raises(CredentialsFileError):
        save_entry(path, "users", Entry("bob", "viewer", hash_password("b" * 8)))
    assert path.read_text() == "alice:viewer\n"
