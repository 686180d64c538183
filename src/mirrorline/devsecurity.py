"""Security of secured dev clusters: SASL/SCRAM-SHA-512 over TLS, with an authorizer.

`mirrorline dev up --security sasl_ssl` starts brokers the way production
clusters run: the client listener speaks SASL_SSL only, users authenticate
with SCRAM-SHA-512, and Kafka's standard authorizer refuses anything no ACL
allows (`allow.everyone.if.no.acl.found=false`). A set of clusters in one
directory shares, under ``security/``:

- ``ca.pem``: the certificate authority clients trust; ``ca-key.pem`` (0600)
  signs the certificate of clusters added later;
- ``secrets.properties`` (0600): the passwords of the two users, as a
  properties file that configurations read through ``${file:PATH:KEY}``;
- ``<alias>-broker.pem`` (0600): the key and certificate every node of cluster
  ``alias`` presents (for ``localhost`` and ``127.0.0.1``, the address of all
  nodes, so host name verification stays on).

Users: ``admin`` is a super user (what the brokers use among themselves and
what scripts use to set up topics and ACLs); ``mirrorline`` is the
replication user, who has no rights until ACLs grant them. In a cluster of
several nodes the brokers replicate among themselves over the same SASL_SSL
listener clients use, logged in as ``admin`` (one listener to secure, and the
inter-broker traffic is checked the way clients' is). The controller listener
(the metadata quorum and brokers' registrations) stays PLAINTEXT on loopback;
its principal (``User:ANONYMOUS``) is a super user because KRaft's controller
cannot authenticate with SCRAM.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from mirrorline.certificates import CertificateAuthority, write_private
from mirrorline.config.properties import read_properties

__all__ = ["ADMIN_USER", "REPLICATION_USER", "SECURITY_MODES", "DevSecurity"]

SECURITY_MODES = ("plaintext", "sasl_ssl")
ADMIN_USER = "admin"
REPLICATION_USER = "mirrorline"
MECHANISM = "SCRAM-SHA-512"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass(frozen=True)
class DevSecurity:
    """The security material of the secured clusters in one directory (see the module)."""

    home: Path

    @classmethod
    def of(cls, clusters_dir: Path) -> DevSecurity:
        return cls(clusters_dir / "security")

    @property
    def ca_file(self) -> Path:
        return self.home / "ca.pem"

    @property
    def secrets_file(self) -> Path:
        return self.home / "secrets.properties"

    def ensure(self) -> None:
        """Create the CA and the users' passwords, unless an earlier `up` did."""
        if self.ca_file.exists() and self.secrets_file.exists():
            return
        ca = CertificateAuthority.create("Mirrorline dev clusters CA")
        self.home.mkdir(parents=True, exist_ok=True)
        self.home.chmod(0o700)
        write_private(self.home / "ca-key.pem", ca.key_pem)
        self.ca_file.write_bytes(ca.cert_pem)
        write_private(
            self.secrets_file,
            "".join(
                f"{user}.password={secrets.token_urlsafe(18)}\n"
                for user in (ADMIN_USER, REPLICATION_USER)
            ),
        )

    def password(self, user: str) -> str:
        for entry in read_properties(self.secrets_file):
            if entry.key == f"{user}.password":
                return entry.value
        raise KeyError(f"no password for {user} in {self.secrets_file}")

    def broker_keystore(self, alias: str) -> Path:
        """Issue (once) the broker certificate of cluster `alias`; its PEM keystore file."""
        path = self.home / f"{alias}-broker.pem"
        if not path.exists():
            ca = CertificateAuthority.load(
                self.ca_file.read_bytes(), (self.home / "ca-key.pem").read_bytes()
            )
            write_private(path, ca.issue(f"{alias} broker").combined_pem())
        return path

    def format_arguments(self) -> list[str]:
        """`kafka-storage format` arguments that create both SCRAM users in the metadata."""
        arguments = []
        for user in (ADMIN_USER, REPLICATION_USER):
            arguments += [
                "--add-scram",
                f"{MECHANISM}=[name={user},password={self.password(user)}]",
            ]
        return arguments

    def server_properties(
        self, alias: str, client_listener: str, controller_port: int
    ) -> dict[str, str]:
        """Broker settings for a SASL_SSL client listener and the authorizer."""
        admin_login = self.jaas(ADMIN_USER, self.password(ADMIN_USER))
        return {
            "listeners": f"SASL_SSL://{client_listener},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"SASL_SSL://{client_listener}",
            "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "SASL_SSL",
            "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config": admin_login,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.broker_keystore(alias)),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
            "authorizer.class.name": _AUTHORIZER,
            "allow.everyone.if.no.acl.found": "false",
            "super.users": f"User:{ADMIN_USER};User:ANONYMOUS",
        }

    @staticmethod
    def jaas(user: str, password: str) -> str:
        return f'{_SCRAM_MODULE} required username="{user}" password="{password}";'

    def mm2_properties(self, alias: str) -> list[str]:
        """The lines of a properties file that connect to `alias` as the replication user.

        The password stays in `secrets.properties`, read through `${file:...}`.
        """
        secret = f"${{file:{self.secrets_file}:{REPLICATION_USER}.password}}"
        return [
            f"{alias}.security.protocol = SASL_SSL",
            f"{alias}.sasl.mechanism = {MECHANISM}",
            f"{alias}.sasl.jaas.config = {self.jaas(REPLICATION_USER, secret)}",
            f"{alias}.ssl.truststore.type = PEM",
            f"{alias}.ssl.truststore.location = {self.ca_file}",
        ]

    def client_config(self, bootstrap_servers: str, user: str = ADMIN_USER) -> dict[str, str]:
        """A librdkafka client configuration for `user` (scripts, tests)."""
        return {
            "bootstrap.servers": bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": MECHANISM,
            "sasl.username": user,
            "sasl.password": self.password(user),
            "ssl.ca.location": str(self.ca_file),
        }
