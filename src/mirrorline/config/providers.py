"""Config providers: `${env:NAME}`, `${file:PATH:KEY}` and `${directory:PATH:FILE}`.

They use Kafka's placeholder syntax, so an MM2 file that keeps its secrets
out of line works unchanged (Kafka's `config.providers` declarations are
accepted and not needed: the three providers are always available).

* `${env:NAME}` is the environment variable NAME;
* `${file:PATH:KEY}` is the value of KEY in the properties file PATH
  (Kafka's FileConfigProvider);
* `${directory:PATH:FILE}` is the content of file FILE in directory PATH
  (Kafka's DirectoryConfigProvider, handy with mounted secrets).

A relative PATH is read from the directory of the configuration file. A
missing variable, file or key is an error naming the key and line that asked
for it; the value it would have produced is never shown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mirrorline.config.errors import ConfigError, ConfigIssue
from mirrorline.config.origin import Origin

__all__ = ["ProviderContext", "resolve_placeholders"]

# Kafka's ConfigTransformer pattern: ${provider:[path:]key}.
_PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")


@dataclass
class ProviderContext:
    """What providers need to look values up: the environment and a base directory."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    base_dir: Path = field(default_factory=Path.cwd)
    _files: dict[Path, dict[str, str]] = field(default_factory=dict, repr=False)

    def read_properties_file(self, path: Path) -> dict[str, str]:
        """The entries of a properties file, read once per load."""
        if path not in self._files:
            # Imported here: properties imports errors, which must stay importable on its own.
            from mirrorline.config.properties import read_properties

            self._files[path] = {p.key: p.value for p in read_properties(path)}
        return self._files[path]


def resolve_placeholders(
    value: str, origin: Origin, context: ProviderContext, issues: list[ConfigIssue]
) -> tuple[str, bool]:
    """Replace every placeholder in `value`.

    Returns the resolved text and whether any provider was used (such values
    are treated as secrets). Problems are appended to `issues`; the
    placeholder is then left as written.
    """
    used = False

    def substitute(match: re.Match[str]) -> str:
        nonlocal used
        provider, path, key = match.group(1), match.group(2), match.group(3)
        try:
            resolved = _lookup(provider.strip(), path, key.strip(), context)
        except _LookupFailed as failure:
            issues.append(
                ConfigIssue(
                    f"cannot resolve {match.group(0)}: {failure.reason}", origin, failure.hint
                )
            )
            return match.group(0)
        used = True
        return resolved

    return _PLACEHOLDER.sub(substitute, value), used


class _LookupFailed(Exception):
    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


def _lookup(provider: str, path: str | None, key: str, context: ProviderContext) -> str:
    if provider == "env":
        if key not in context.environ:
            raise _LookupFailed(
                f"environment variable {key} is not set",
                f"export {key} before starting Mirrorline",
            )
        return context.environ[key]
    if provider == "file":
        if not path:
            raise _LookupFailed("no file given", "write ${file:PATH:KEY}")
        file = _path(path, context)
        try:
            entries = context.read_properties_file(file)
        except ConfigError as exc:
            raise _LookupFailed(
                f"cannot read properties file {file}", exc.issues[0].message
            ) from None
        if key not in entries:
            raise _LookupFailed(f"key {key!r} is not in {file}", f"add `{key} = ...` to {file}")
        return entries[key]
    if provider == "directory":
        if not path:
            raise _LookupFailed("no directory given", "write ${directory:PATH:FILE}")
        file = _path(path, context) / key
        try:
            return file.read_text(encoding="utf-8")
        except OSError as exc:
            raise _LookupFailed(
                f"cannot read {file}: {exc.strerror or exc}", "check the path and permissions"
            ) from None
    raise _LookupFailed(
        f"unknown config provider {provider!r}",
        "Mirrorline provides env, file and directory",
    )


def _path(path: str, context: ProviderContext) -> Path:
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else context.base_dir / candidate
