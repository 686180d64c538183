"""How a gateway calls remote services: credentials, trusted authorities, what counts as an answer.

A remote service that authenticates callers needs the gateway's credentials
(`service.remote.auth.username` and `.password` for HTTP basic, or
`service.remote.auth.token`), sent with every request; a remote served over
HTTPS needs a certificate the gateway trusts (the system's authorities, or
those of `service.remote.tls.ca`). The same credentials go to every remote
service: give the gateway's user the `viewer` role on each of them.

A 401 or 403 is no answer: the remote refused the gateway's credentials, so
it shows as unreachable with that reason, like one that is down. Redirects
are not followed, so that credentials never travel to another address.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from mirrorline.config.errors import ConfigError, ConfigIssue
from mirrorline.config.service_security import RemoteAccessSettings

__all__ = ["RemoteAccess", "RemoteFailed"]

TIMEOUT_S = 3.0
_REFUSED = {
    401: "refused the credentials (HTTP 401): check service.remote.auth.*",
    403: "refused the request to the credentials' role (HTTP 403): give the user the viewer role",
}


class RemoteFailed(RuntimeError):
    """The remote service gave no answer; the message says why (never a credential)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx is then an HTTPError, reported as such


@dataclass(frozen=True)
class RemoteAccess:
    """Calls remote services with this service's credentials (`repr` hides them)."""

    authorization: str = field(default="", repr=False)
    context: ssl.SSLContext | None = None

    @classmethod
    def of(cls, settings: RemoteAccessSettings) -> RemoteAccess:
        """From the settings; `ConfigError` when the CA file cannot be used."""
        authorization = ""
        if settings.token:
            authorization = f"Bearer {settings.token}"
        elif settings.username:
            pair = f"{settings.username}:{settings.password}".encode()
            authorization = f"Basic {base64.b64encode(pair).decode()}"
        context = None
        if settings.ca is not None:
            try:
                context = ssl.create_default_context(cafile=str(settings.ca))
            except (OSError, ssl.SSLError) as exc:
                reason = getattr(exc, "strerror", None) or str(exc)
                raise ConfigError(
                    [
                        ConfigIssue(
                            f"cannot load certificate authorities from {settings.ca}: {reason}",
                            hint="name a readable PEM file of CA certificates",
                            key="service.remote.tls.ca",
                        )
                    ]
                ) from None
        return cls(authorization, context)

    def get(self, url: str) -> tuple[int, Any]:
        """GET a JSON document: (HTTP status, document). A 4xx other than 401 and 403 is
        the remote's answer; anything else that is not a 200 raises `RemoteFailed`."""
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self.authorization:
            request.add_unredirected_header("Authorization", self.authorization)
        handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
        if self.context is not None:
            handlers.append(urllib.request.HTTPSHandler(context=self.context))
        opener = urllib.request.build_opener(*handlers)
        try:
            with opener.open(request, timeout=TIMEOUT_S) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code in _REFUSED:
                raise RemoteFailed(_REFUSED[exc.code]) from None
            if exc.code < 500:
                try:
                    return exc.code, json.loads(exc.read())  # the remote's own 4xx, passed on
                except ValueError:
                    pass
            raise RemoteFailed(f"HTTP {exc.code}") from None
        except http.client.HTTPException as exc:  # something answered, but not in HTTP
            raise RemoteFailed(f"the answer is not HTTP ({type(exc).__name__})") from None
        except (OSError, ValueError) as exc:
            raise RemoteFailed(str(getattr(exc, "reason", exc))) from None
