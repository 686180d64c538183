"""Security of secured dev clusters: SASL/SCRAM over TLS, or mutual TLS, with an authorizer.

`mirrorline dev up --security sasl_ssl|mtls` starts brokers the way
production clusters run, in one of two modes:

- ``sasl_ssl``: the client listener speaks SASL_SSL only and users
  authenticate with SCRAM-SHA-512 (user name and password);
- ``mtls``: the client listener speaks SSL only with ``ssl.client.auth=required``:
  a client authenticates with a certificate signed by the dev CA, and its
  principal is ``User:<CN>`` of the certificate's subject
  (``ssl.principal.mapping.rules``). A connection without a certificate, or
  with one the CA did not sign, fails its TLS handshake.

Either way Kafka's standard authorizer refuses anything no ACL allows
(``allow.everyone.if.no.acl.found=false``). A set of clusters in one directory
shares, under ``security/`` (0700):

- ``ca.pem``: the certificate authority clients trust; ``ca-key.pem`` (0600)
  signs the certificate of clusters and users added later;
- ``secrets.properties`` (0600): per user its SCRAM password and the password
  of its keystore, as a properties file that configurations read through
  ``${file:PATH:KEY}``;
- ``<alias>-broker.pem`` (0600): the key and certificate every node of cluster
  ``alias`` presents with sasl_ssl (for ``localhost`` and ``127.0.0.1``, the
  address of all nodes, so host name verification stays on);
- for mtls, per user ``<user>.p12`` (PKCS12 under the user's keystore password,
  what Java clients and Mirrorline configurations use) and ``<user>.pem`` (its
  key and certificate in PEM, for librdkafka scripts), both 0600. The user's
  certificate is issued for ``localhost`` and ``127.0.0.1`` too.

Users: ``admin`` is a super user (what the brokers use among themselves and
what scripts use to set up topics and ACLs); ``mirrorline`` is the
replication user, who has no rights until ACLs grant them. In a cluster of
several nodes the brokers replicate among themselves over the same listener
clients use, authenticated as ``admin``: with SCRAM, or with mtls by presenting
the admin certificate (every node's keystore is ``admin.pem``, so a node is
``User:admin`` to the node it connects to). One listener to secure, and the
inter-broker traffic is checked the way clients' is. The controller listener
(the metadata quorum and brokers' registrations) stays PLAINTEXT on loopback;
its principal (``User:ANONYMOUS``) is a super user because KRaft's controller
cannot authenticate over it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from mirrorline.certificates import CertificateAuthority, write_private
from mirrorline.config.properties import read_properties

__all__ = ["ADMIN_USER", "REPLICATION_USER", "SECURED_MODES", "SECURITY_MODES", "DevSecurity"]

SECURED_MODES = ("sasl_ssl", "mtls")
SECURITY_MODES = ("plaintext", *SECURED_MODES)
ADMIN_USER = "admin"
REPLICATION_USER = "mirrorline"
USERS = (ADMIN_USER, REPLICATION_USER)
MECHANISM = "SCRAM-SHA-512"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# The dev CA issues user certificates whose subject is only CN=<user>.
PRINCIPAL_MAPPING = "RULE:^CN=([^,]+)$/$1/,DEFAULT"
_SECRETS = ("password", "keystore.password")


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
        """Create the CA and the users' secrets, unless an earlier `up` did.

        Secrets an earlier version of the file lacks are added to it; those it
        has stay, so running clusters keep working.
        """
        self.home.mkdir(parents=True, exist_ok=True)
        self.home.chmod(0o700)
        if not self.ca_file.exists():
            ca = CertificateAuthority.create("Mirrorline dev clusters CA")
            write_private(self.home / "ca-key.pem", ca.key_pem)
            self.ca_file.write_bytes(ca.cert_pem)
        known = (
            {e.key: e.value for e in read_properties(self.secrets_file)}
            if self.secrets_file.exists()
            else {}
        )
        wanted = [f"{user}.{kind}" for user in USERS for kind in _SECRETS]
        if all(key in known for key in wanted):
            return
        values = {key: known.get(key) or secrets.token_urlsafe(18) for key in wanted}
        write_private(self.secrets_file, "".join(f"{k}={v}\n" for k, v in values.items()))

    def _secret(self, key: str) -> str:
        for entry in read_properties(self.secrets_file):
            if entry.key == key:
                return entry.value
        raise KeyError(f"no {key} in {self.secrets_file}")

    def password(self, user: str) -> str:
        """`user`'s SCRAM password."""
        return self._secret(f"{user}.password")

    def keystore_password(self, user: str) -> str:
        """The password of `user`'s PKCS12 keystore."""
        return self._secret(f"{user}.keystore.password")

    def _authority(self) -> CertificateAuthority:
        return CertificateAuthority.load(
            self.ca_file.read_bytes(), (self.home / "ca-key.pem").read_bytes()
        )

    def broker_keystore(self, alias: str) -> Path:
        """Issue (once) the broker certificate of cluster `alias`; its PEM keystore file."""
        path = self.home / f"{alias}-broker.pem"
        if not path.exists():
            write_private(path, self._authority().issue(f"{alias} broker").combined_pem())
        return path

    def user_keystore(self, user: str) -> Path:
        """Issue (once) `user`'s client certificate; its PKCS12 keystore (see the module)."""
        path = self.home / f"{user}.p12"
        if not path.exists():
            pair = self._authority().issue(user)
            write_private(self.home / f"{user}.pem", pair.combined_pem())
            write_private(path, pair.pkcs12(user, self.keystore_password(user)))
        return path

    def user_pem(self, user: str) -> Path:
        """`user`'s key and certificate as one PEM file (issued with the PKCS12 keystore)."""
        self.user_keystore(user)
        return self.home / f"{user}.pem"

    def format_arguments(self, mode: str) -> list[str]:
        """`kafka-storage format` arguments: with sasl_ssl, both SCRAM users in the metadata."""
        if mode != "sasl_ssl":
            return []
        arguments = []
        for user in USERS:
            arguments += [
                "--add-scram",
                f"{MECHANISM}=[name={user},password={self.password(user)}]",
            ]
        return arguments

    def server_properties(
        self, alias: str, client_listener: str, controller_port: int, mode: str
    ) -> dict[str, str]:
        """Broker settings for a SASL_SSL or mutual-TLS client listener and the authorizer."""
        listener = "SSL" if mode == "mtls" else "SASL_SSL"
        settings = {
            "listeners": f"{listener}://{client_listener},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"{listener}://{client_listener}",
            "listener.security.protocol.map": f"{listener}:{listener},CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": listener,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
            "ssl.keystore.type": "PEM",
            "authorizer.class.name": _AUTHORIZER,
            "allow.everyone.if.no.acl.found": "false",
            "super.users": f"User:{ADMIN_USER};User:ANONYMOUS",
        }
        if mode == "mtls":
            settings |= {
                "ssl.keystore.location": str(self.user_pem(ADMIN_USER)),
                "ssl.client.auth": "required",
                "ssl.principal.mapping.rules": PRINCIPAL_MAPPING,
            }
        else:
            settings |= {
                "ssl.keystore.location": str(self.broker_keystore(alias)),
                "sasl.enabled.mechanisms": MECHANISM,
                "sasl.mechanism.inter.broker.protocol": MECHANISM,
                f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config": self.jaas(
                    ADMIN_USER, self.password(ADMIN_USER)
                ),
            }
        return settings

    @staticmethod
    def jaas(user: str, password: str) -> str:
        return f'{_SCRAM_MODULE} required username="{user}" password="{password}";'

    def mm2_properties(self, alias: str, mode: str) -> list[str]:
        """The lines of a properties file that connect to `alias` as the replication user.

        The password stays in `secrets.properties`, read through `${file:...}`.
        """
        if mode == "mtls":
            secret = f"${{file:{self.secrets_file}:{REPLICATION_USER}.keystore.password}}"
            login = [
                f"{alias}.security.protocol = SSL",
                f"{alias}.ssl.keystore.type = PKCS12",
                f"{alias}.ssl.keystore.location = {self.user_keystore(REPLICATION_USER)}",
                f"{alias}.ssl.keystore.password = {secret}",
            ]
        else:
            secret = f"${{file:{self.secrets_file}:{REPLICATION_USER}.password}}"
            login = [
                f"{alias}.security.protocol = SASL_SSL",
                f"{alias}.sasl.mechanism = {MECHANISM}",
                f"{alias}.sasl.jaas.config = {self.jaas(REPLICATION_USER, secret)}",
            ]
        return login + [
            f"{alias}.ssl.truststore.type = PEM",
            f"{alias}.ssl.truststore.location = {self.ca_file}",
        ]

    def client_config(
        self, bootstrap_servers: str, mode: str, user: str = ADMIN_USER
    ) -> dict[str, str]:
        """A librdkafka client configuration for `user` (scripts, tests)."""
        config = {"bootstrap.servers": bootstrap_servers, "ssl.ca.location": str(self.ca_file)}
        if mode == "mtls":
            identity = str(self.user_pem(user))
            return config | {
                "security.protocol": "SSL",
                "ssl.certificate.location": identity,
                "ssl.key.location": identity,
            }
        return config | {
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": MECHANISM,
            "sasl.username": user,
            "sasl.password": self.password(user),
        }
