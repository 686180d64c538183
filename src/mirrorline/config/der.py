"""Just enough DER to look inside key stores.

JKS keeps each private key as a DER `EncryptedPrivateKeyInfo`, and a PKCS#12
file is DER from end to end. Mirrorline only needs to walk a few known
structures (sequences, octet strings, object identifiers, context tags), so
this reads tag-length-value items and nothing more: no schema, no BER
indefinite lengths (which a store written by keytool or OpenSSL never has).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "OBJECT_IDENTIFIER",
    "OCTET_STRING",
    "SEQUENCE",
    "DerError",
    "DerItem",
    "items",
    "object_identifier",
    "one",
]

SEQUENCE = 0x30
OCTET_STRING = 0x04
OBJECT_IDENTIFIER = 0x06


class DerError(ValueError):
    """The bytes are not the DER structure expected."""


@dataclass(frozen=True)
class DerItem:
    """One tag-length-value item: its tag byte and its content bytes."""

    tag: int
    content: bytes

    @property
    def constructed(self) -> bool:
        """True for items whose content is itself a series of items."""
        return bool(self.tag & 0x20)

    def children(self) -> list[DerItem]:
        """The items inside a constructed item."""
        if not self.constructed:
            raise DerError(f"tag {self.tag:#x} holds no items")
        return items(self.content)


def items(data: bytes) -> list[DerItem]:
    """Every item of `data`, which must hold whole items and nothing else."""
    result = []
    position = 0
    while position < len(data):
        item, position = _read(data, position)
        result.append(item)
    return result


def one(data: bytes) -> DerItem:
    """The single item `data` holds."""
    found = items(data)
    if len(found) != 1:
        raise DerError(f"expected one item, found {len(found)}")
    return found[0]


def object_identifier(item: DerItem) -> str:
    """The dotted form of an OBJECT IDENTIFIER item."""
    if item.tag != OBJECT_IDENTIFIER or not item.content:
        raise DerError("expected an object identifier")
    first = item.content[0]
    parts = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    value = 0
    for byte in item.content[1:]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(value)
            value = 0
    return ".".join(str(p) for p in parts)


def _read(data: bytes, position: int) -> tuple[DerItem, int]:
    if position + 2 > len(data):
        raise DerError("truncated item")
    tag = data[position]
    if tag & 0x1F == 0x1F:
        raise DerError("multi-byte tags are not used by key stores")
    length = data[position + 1]
    position += 2
    if length & 0x80:
        size = length & 0x7F
        if size == 0 or size > 4 or position + size > len(data):
            raise DerError("unsupported or truncated length")
        length = int.from_bytes(data[position : position + size], "big")
        position += size
    end = position + length
    if end > len(data):
        raise DerError("truncated item")
    return DerItem(tag, data[position:end]), end
