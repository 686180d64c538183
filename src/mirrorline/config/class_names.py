"""Parsers of the flow settings that name a Java class.

MirrorMaker 2 lets a file name the classes of its filters, its header converter,
its forwarding admin and its replication policy. Mirrorline accepts a short name
for MM2's own classes (as Connect does for its built-ins), maps them to its
own code, and refuses a class whose effect it does not reproduce, saying why.
Which of the accepted names are the file's own Java classes is decided later,
with the flow's `plugin.path` (`plugin_classes`).
"""

from __future__ import annotations

from collections.abc import Callable

from mirrorline.config.transforms import BYTE_ARRAY_CONVERTER, SIMPLE_HEADER_CONVERTER

DEFAULT_POLICY_CLASS = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
DEFAULT_FORWARDING_ADMIN = "org.apache.kafka.clients.admin.ForwardingAdmin"


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def parse_class_name(text: str) -> str:
    """A class name, as given; it must not be blank."""
    name = text.strip()
    if not name:
        raise ValueError("must not be blank")
    return name


def parse_filter_class(default: str) -> Callable[[str], str]:
    """A filter class: MM2's `default` (also by its short name) or any other class."""

    def parse(text: str) -> str:
        name = parse_class_name(text)
        return default if name == _short(default) else name

    return parse


def parse_header_converter(text: str) -> str:
    """MM2's header converter: the two whose effect on headers the writer has."""
    name = text.strip()
    for known in (BYTE_ARRAY_CONVERTER, SIMPLE_HEADER_CONVERTER):
        if name in (known, _short(known)):
            return known
    raise ValueError(
        f"{name} would change headers in a way Mirrorline does not reproduce; use "
        f"{BYTE_ARRAY_CONVERTER} (MM2's default) or {SIMPLE_HEADER_CONVERTER}"
    )


def parse_forwarding_admin(text: str) -> str:
    """MM2's forwarding admin: only its default, which Mirrorline's admin client replaces."""
    name = text.strip()
    if name not in (DEFAULT_FORWARDING_ADMIN, _short(DEFAULT_FORWARDING_ADMIN)):
        raise ValueError(
            "MirrorMaker 2 would create and configure remote topics (and their ACLs) through "
            "this class; Mirrorline does it with its own admin client, so topics would not "
            "land as they do with MirrorMaker 2. Remove the line (Mirrorline's admin client "
            "needs what `mirrorline acls` lists), or keep MirrorMaker 2 for this flow"
        )
    return DEFAULT_FORWARDING_ADMIN
