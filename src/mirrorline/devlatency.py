"""A simulated wide-area link between clients and dev clusters, in user space on loopback.

This kernel-independent way to put 25-100 ms between Mirrorline and a cluster
uses Toxiproxy (Shopify's TCP proxy, a Go program): one proxy server process,
one proxy per broker listener, and on each proxy the link's "toxics":

- `latency` on both directions, half the round trip each, with half the
  jitter each (a round trip of 50 ms is 25 ms on the way out and 25 ms back);
- `bandwidth` on both directions when a rate is set (KiB/s, as Toxiproxy
  counts).

A broker behind the link advertises the proxy's port, so every client
connection, the bootstrap one and those to each broker, crosses the link;
brokers among themselves do not (their own listener), as in a data centre
whose clients are far away. Everything listens on 127.0.0.1 only.

The server is built once from its Go module (`go install`, pinned version)
into the jar cache's `tools` directory (`binary()`), so a host with Go and
the module proxy builds it on first use and an offline host gets a copy of
the cache. The server's HTTP API (`/proxies`, `/proxies/<name>/toxics`) is
driven with the standard library.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mirrorline import jvm
from mirrorline.process import dying_with_parent, pid_alive, port_accepts, terminate_pid

MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
VERSION = "v2.5.0"
BINARY = f"toxiproxy-server-{VERSION}"

Progress = Callable[[str], None]

__all__ = ["Link", "LinkError", "LinkServer", "binary"]


class LinkError(RuntimeError):
    """The simulated link could not be built, started or configured; the message says why."""


@dataclass(frozen=True)
class Link:
    """What the link adds to every connection: round-trip latency, jitter, bandwidth."""

    latency_ms: int
    jitter_ms: int = 0
    bandwidth_kib_s: int | None = None  # per direction; None: as fast as loopback

    def __post_init__(self) -> None:
        if self.latency_ms < 0 or self.jitter_ms < 0:
            raise LinkError("latency and jitter are milliseconds, zero or more")
        if self.bandwidth_kib_s is not None and self.bandwidth_kib_s <= 0:
            raise LinkError("bandwidth is KiB/s, more than zero")

    def toxics(self) -> list[dict[str, object]]:
        """Toxiproxy's toxics for this link, on both directions."""
        found: list[dict[str, object]] = []
        for stream in ("upstream", "downstream"):
            found.append(
                {
                    "name": f"latency_{stream}",
                    "type": "latency",
                    "stream": stream,
                    "attributes": {
                        "latency": self.latency_ms // 2,
                        "jitter": self.jitter_ms // 2,
                    },
                }
            )
            if self.bandwidth_kib_s is not None:
                found.append(
                    {
                        "name": f"bandwidth_{stream}",
                        "type": "bandwidth",
                        "stream": stream,
                        "attributes": {"rate": self.bandwidth_kib_s},
                    }
                )
        return found

    def describe(self) -> str:
        jitter = f" ± {self.jitter_ms} ms" if self.jitter_ms else ""
        rate = f", {self.bandwidth_kib_s} KiB/s" if self.bandwidth_kib_s else ""
        return f"{self.latency_ms} ms round trip{jitter}{rate}"


def binary(progress: Progress | None = None) -> Path:
    """The Toxiproxy server, built into the jar cache on first use (needs `go`)."""
    tools = jvm.jar_cache_dir() / "tools"
    target = tools / BINARY
    if target.is_file():
        return target
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None
    )
    if go is None:
        raise LinkError(
            f"a simulated WAN link needs Toxiproxy, built from {MODULE}@{VERSION} with Go: "
            f"no `go` command here; install Go, or copy a built {BINARY} into {tools}"
        )
    if progress:
        progress(f"building Toxiproxy {VERSION} with {go} (once, into {tools})")
    tools.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tools) as build:
        done = subprocess.run(
            [go, "install", f"{MODULE}@{VERSION}"],
            env={**os.environ, "GOBIN": build},
            capture_output=True,
            text=True,
            timeout=600,
        )
        built = Path(build) / "server"
        if done.returncode != 0 or not built.is_file():
            raise LinkError(
                f"building Toxiproxy ({go} install {MODULE}@{VERSION}) failed: "
                f"{(done.stderr or done.stdout).strip()[-800:]}"
            )
        built.replace(target)
    return target


class LinkServer:
    """One Toxiproxy server and its proxies, found again by its API port and pid."""

    def __init__(self, api_port: int, pid: int) -> None:
        self.api_port, self.pid = api_port, pid

    @classmethod
    def start(
        cls,
        api_port: int,
        log_file: Path,
        *,
        die_with_parent: bool = False,
        progress: Progress | None = None,
        timeout: float = 30.0,
    ) -> LinkServer:
        server = binary(progress)
        command = [str(server), "-host", "127.0.0.1", "-port", str(api_port)]
        if die_with_parent:
            command = dying_with_parent(command)
        with open(log_file, "ab") as log:
            popen = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while not port_accepts(api_port):
            if popen.poll() is not None or time.monotonic() > deadline:
                popen.kill()
                raise LinkError(f"Toxiproxy did not start on 127.0.0.1:{api_port}; see {log_file}")
            time.sleep(0.05)
        return cls(api_port, popen.pid)

    def forward(self, name: str, listen_port: int, upstream_port: int, link: Link) -> None:
        """A proxy `name` from 127.0.0.1:`listen_port` to 127.0.0.1:`upstream_port`."""
        self._call(
            "POST",
            "/proxies",
            {
                "name": name,
                "listen": f"127.0.0.1:{listen_port}",
                "upstream": f"127.0.0.1:{upstream_port}",
                "enabled": True,
            },
        )
        for toxic in link.toxics():
            self._call("POST", f"/proxies/{name}/toxics", toxic)

    def proxies(self) -> dict[str, dict[str, object]]:
        """Every proxy of the server with its settings and toxics."""
        found = self._call("GET", "/proxies")
        return found if isinstance(found, dict) else {}

    def alive(self) -> bool:
        return pid_alive(self.pid)

    def stop(self, timeout: float = 10.0) -> None:
        terminate_pid(self.pid, timeout)

    def _call(self, method: str, path: str, body: object | None = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.api_port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            said = exc.read().decode(errors="replace")
            raise LinkError(f"Toxiproxy refused {method} {path}: {exc.code} {said}") from None
        except OSError as exc:
            raise LinkError(
                f"Toxiproxy on 127.0.0.1:{self.api_port} did not answer: {exc}"
            ) from None
        return json.loads(text) if text else None
