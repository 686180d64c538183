"""The service's users and tokens files: who may call it, with which role, by hashed secret.

Both files hold one principal a line, `name:role:hash`; blank lines and lines
starting with `#` are ignored:

    # users file (service.auth.users.file), HTTP basic authentication
    alice:operator:$scrypt$ln=15,r=8,p=1$<salt>$<hash>
    grafana:viewer:$scrypt$ln=15,r=8,p=1$<salt>$<hash>

    # tokens file (service.auth.tokens.file), bearer tokens
    prometheus:viewer:$sha256$<hex>

A password is hashed with scrypt (standard library), a random 16-byte salt of
its own and the cost in the string itself (`ln` is log2 of N), so that a file
made today still verifies after the defaults grow. A token is 32 random bytes
made by `new_token`: guessing it is hopeless, so its SHA-256 is enough and is
quick to check on every request. Names are letters, digits and `._@-`; roles
are `viewer` (reads everything the service serves) and `operator` (a viewer
that may also run operations).

Errors name the file and line, never the hash or a password. The files are
written whole, through a temporary file, readable by their owner only
(`mirrorline service passwd` and `mirrorline service token` use `save_entry`
and `remove_entry`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mirrorline.certificates import write_private

__all__ = [
    "ROLES",
    "CredentialsFileError",
    "Entry",
    "Role",
    "check_name",
    "check_role",
    "grants",
    "hash_password",
    "hash_token",
    "new_token",
    "read_entries",
    "remove_entry",
    "save_entry",
    "verify_password",
    "verify_token",
]

Role = Literal["viewer", "operator"]
Kind = Literal["users", "tokens"]
#: The roles, each one granting what those before it grant.
ROLES: tuple[Role, ...] = ("viewer", "operator")

SCRYPT_LN, SCRYPT_R, SCRYPT_P = 15, 8, 1  # N = 32768: 32 MiB and ~60 ms a hash
TOKEN_PREFIX = "mlt_"
_NAME = re.compile(r"[A-Za-z0-9._@-]{1,100}")
_SCRYPT = re.compile(
    r"\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]{16,})\$([A-Za-z0-9+/]{32,})"
)
_SHA256 = re.compile(r"\$sha256\$([0-9a-f]{64})")
_HEADER = {
    "users": "# Mirrorline service users: name:role:scrypt hash "
    "(mirrorline service passwd; roles: viewer, operator)\n",
    "tokens": "# Mirrorline service tokens: name:role:sha256 of the token "
    "(mirrorline service token; roles: viewer, operator)\n",
}
_WRITE_WITH = {"users": "mirrorline service passwd", "tokens": "mirrorline service token"}


class CredentialsFileError(ValueError):
    """A users or tokens file that cannot be used: which one, where, and what to do."""


@dataclass(frozen=True)
class Entry:
    """One principal of a file. `repr` leaves the hash out."""

    name: str
    role: Role
    hash: str = field(repr=False)


def grants(held: Role, needed: Role) -> bool:
    """Whether a principal with role `held` may do what needs `needed`."""
    return ROLES.index(held) >= ROLES.index(needed)


def check_name(name: str) -> str:
    """`name` if it can name a principal, else `ValueError` saying what may."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"{name!r} cannot be a name: use letters, digits and . _ @ - (up to 100)")
    return name


def check_role(role: str) -> Role:
    for known in ROLES:
        if role == known:
            return known
    raise ValueError(f"role {role!r} is unknown: use {' or '.join(ROLES)}")


# -- hashing ---------------------------------------------------------------------------


def hash_password(password: str) -> str:
    """The self-describing scrypt hash of `password`, with a new random salt."""
    salt = secrets.token_bytes(16)
    digest = _scrypt(password, salt, SCRYPT_LN, SCRYPT_R, SCRYPT_P)
    return f"$scrypt$ln={SCRYPT_LN},r={SCRYPT_R},p={SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, encoded: str) -> bool:
    """Whether `password` is the one `encoded` (from `hash_password`) was made from."""
    match = _SCRYPT.fullmatch(encoded)
    if match is None:
        return False
    ln, r, p = (int(match.group(i)) for i in (1, 2, 3))
    expected = _unb64(match.group(5))
    actual = _scrypt(password, _unb64(match.group(4)), ln, r, p, len(expected))
    return hmac.compare_digest(actual, expected)


def new_token() -> str:
    """A new random bearer token (shown once; only `hash_token` of it is kept)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return "$sha256$" + hashlib.sha256(token.encode()).hexdigest()


def verify_token(token: str, encoded: str) -> bool:
    return hmac.compare_digest(hash_token(token).encode(), encoded.encode())


def _scrypt(password: str, salt: bytes, ln: int, r: int, p: int, length: int = 32) -> bytes:
    n = 1 << ln
    return hashlib.scrypt(
        password.encode(),
        salt=salt,
        n=n,
        r=r,
        p=p,
        dklen=length,
        maxmem=128 * r * (n + p + 2) + 2**20,
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


def _hash_problem(kind: Kind, encoded: str) -> str | None:
    """Why `encoded` is no hash of the `kind` file, or None."""
    if kind == "tokens":
        return None if _SHA256.fullmatch(encoded) else "is not a $sha256$ token hash"
    match = _SCRYPT.fullmatch(encoded)
    if match is None:
        return "is not a $scrypt$ln=..,r=..,p=..$salt$hash password hash"
    ln, r, p = (int(match.group(i)) for i in (1, 2, 3))
    if not (10 <= ln <= 20 and 1 <= r <= 32 and 1 <= p <= 4 and (1 << ln) * r <= 2**21):
        return "has scrypt costs out of range (ln 10-20, r 1-32, p 1-4, at most 256 MiB)"
    return None


# -- the files -------------------------------------------------------------------------


def read_entries(path: Path, kind: Kind, setting: str = "") -> dict[str, Entry]:
    """The principals of a users or tokens file, by name; every mistake at once
    (`CredentialsFileError`), each with its line."""
    where = f"{kind} file {path}" + (f" ({setting})" if setting else "")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CredentialsFileError(
            f"cannot read the {where}: {reason}; create it with {_WRITE_WITH[kind]}"
        ) from None
    entries: dict[str, Entry] = {}
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.strip().split(":")
        if len(fields) != 3:
            problems.append(f"{path}:{number}: expected name:role:hash, found {len(fields)} fields")
            continue
        name, role, encoded = fields
        try:
            check_name(name)
            checked = check_role(role)
        except ValueError as exc:
            problems.append(f"{path}:{number}: {exc}")
            continue
        problem = _hash_problem(kind, encoded)
        if problem is not None:
            problems.append(f"{path}:{number}: the hash of {name} {problem}")
        elif name in entries:
            problems.append(f"{path}:{number}: {name} is listed twice: keep one line")
        else:
            entries[name] = Entry(name, checked, encoded)
    if problems:
        raise CredentialsFileError(
            f"the {where} has mistakes (write lines with {_WRITE_WITH[kind]}):\n  "
            + "\n  ".join(problems)
        )
    return entries


def save_entry(path: Path, kind: Kind, entry: Entry) -> bool:
    """Add `entry` to the file, or replace the line of the same name; True if it replaced one.
    Creates the file (owner only) when missing; keeps comments and other lines."""
    lines, found = _other_lines(path, kind, entry.name)
    lines.append(f"{entry.name}:{entry.role}:{entry.hash}\n")
    write_private(path, "".join(lines).encode("utf-8"))
    return found


def remove_entry(path: Path, kind: Kind, name: str) -> bool:
    """Remove the line of `name`; False if there was none."""
    lines, found = _other_lines(path, kind, name)
    if found:
        write_private(path, "".join(lines).encode("utf-8"))
    return found


def _other_lines(path: Path, kind: Kind, name: str) -> tuple[list[str], bool]:
    if not path.exists():
        return [_HEADER[kind]], False
    read_entries(path, kind)  # refuses to rewrite a file with mistakes
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [x for x in lines if x.strip().split(":", 1)[0] != name or x.lstrip().startswith("#")]
    if kept and not kept[-1].endswith("\n"):
        kept[-1] += "\n"
    return kept, len(kept) != len(lines)
