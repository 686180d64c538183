"""MirrorMaker 2's binary record formats: heartbeats, offset syncs and checkpoints.

Mirrorline writes its internal topics byte for byte as MirrorMaker 2 does, so that
Kafka's own tools (`RemoteClusterUtils`, MM2's message formatters, MM2 itself)
read them unchanged. MM2 serialises each key and value as a Kafka protocol struct:
fields in order, no field names, big-endian integers, and strings as a signed
16-bit byte length followed by UTF-8 (never null). Checkpoint and heartbeat values
start with a 16-bit format version; only version 0 exists.

- offset sync: key (topic: string, partition: int32);
  value (upstream offset: int64, downstream offset: int64).
- checkpoint: key (group: string, topic: string, partition: int32);
  value (version: int16 = 0, upstream offset: int64, downstream offset: int64,
  metadata: string).
- heartbeat: key (source alias: string, target alias: string);
  value (version: int16 = 0, timestamp in ms: int64).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass

FORMAT_VERSION = 0
_MAX_STRING_BYTES = 0x7FFF


class FormatError(ValueError):
    """Bytes that are not a valid record of the expected format."""


def json_record(data: Mapping[str, object]) -> bytes:
    """A key or value of Mirrorline's own internal topics (progress, runs, metadata).

    JSON in UTF-8 with sorted keys and no spaces: equal keys are equal bytes,
    so that compaction keeps one record per key.
    """
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class OffsetSync:
    """The source record at `upstream_offset` was written at `downstream_offset`."""

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    def key(self) -> bytes:
        return _Writer().string(self.topic).int32(self.partition).bytes()

    def value(self) -> bytes:
        return _Writer().int64(self.upstream_offset).int64(self.downstream_offset).bytes()

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> OffsetSync:
        k, v = _Reader(key, "offset sync key"), _Reader(value, "offset sync value")
        sync = cls(k.string(), k.int32(), v.int64(), v.int64())
        k.end()
        v.end()
        return sync


@dataclass(frozen=True)
class Checkpoint:
    """A consumer group's committed offset, upstream and translated downstream.

    `topic` is the topic's name on the cluster the checkpoint is written to (the
    remote topic); `upstream_offset` is the group's offset on the source cluster.
    """

    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def key(self) -> bytes:
        return _Writer().string(self.group).string(self.topic).int32(self.partition).bytes()

    def value(self) -> bytes:
        return (
            _Writer()
            .int16(FORMAT_VERSION)
            .int64(self.upstream_offset)
            .int64(self.downstream_offset)
            .string(self.metadata)
            .bytes()
        )

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Checkpoint:
        k, v = _Reader(key, "checkpoint key"), _Reader(value, "checkpoint value")
        group, topic, partition = k.string(), k.string(), k.int32()
        v.version()
        checkpoint = cls(group, topic, partition, v.int64(), v.int64(), v.string())
        k.end()
        v.end()
        return checkpoint


@dataclass(frozen=True)
class Heartbeat:
    """Proof of life of the flow `source_alias` -> `target_alias` at `timestamp` (ms)."""

    source_alias: str
    target_alias: str
    timestamp: int

    def key(self) -> bytes:
        return _Writer().string(self.source_alias).string(self.target_alias).bytes()

    def value(self) -> bytes:
        return _Writer().int16(FORMAT_VERSION).int64(self.timestamp).bytes()

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Heartbeat:
        k, v = _Reader(key, "heartbeat key"), _Reader(value, "heartbeat value")
        source, target = k.string(), k.string()
        v.version()
        heartbeat = cls(source, target, v.int64())
        k.end()
        v.end()
        return heartbeat


class _Writer:
    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int16(self, n: int) -> _Writer:
        return self._pack(">h", n)

    def int32(self, n: int) -> _Writer:
        return self._pack(">i", n)

    def int64(self, n: int) -> _Writer:
        return self._pack(">q", n)

    def string(self, text: str) -> _Writer:
        data = text.encode("utf-8")
        if len(data) > _MAX_STRING_BYTES:
            raise FormatError(f"string of {len(data)} bytes exceeds the format's 32767-byte limit")
        self._parts.append(struct.pack(">h", len(data)))
        self._parts.append(data)
        return self

    def bytes(self) -> bytes:
        return b"".join(self._parts)

    def _pack(self, fmt: str, n: int) -> _Writer:
        try:
            self._parts.append(struct.pack(fmt, n))
        except struct.error as exc:
            raise FormatError(f"{n} does not fit the field: {exc}") from None
        return self


class _Reader:
    def __init__(self, data: bytes | None, what: str) -> None:
        if data is None:
            raise FormatError(f"{what} is null")
        self._data = memoryview(data)
        self._pos = 0
        self._what = what

    def int16(self) -> int:
        return self._unpack(">h", 2)

    def int32(self) -> int:
        return self._unpack(">i", 4)

    def int64(self) -> int:
        return self._unpack(">q", 8)

    def string(self) -> str:
        length = self.int16()
        if length < 0:
            raise FormatError(f"{self._what}: negative string length {length} (null string)")
        raw = self._take(length)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"{self._what}: string is not UTF-8: {exc}") from None

    def version(self) -> None:
        version = self.int16()
        if version != FORMAT_VERSION:
            raise FormatError(f"{self._what}: unknown format version {version}")

    def end(self) -> None:
        if self._pos != len(self._data):
            raise FormatError(
                f"{self._what}: {len(self._data) - self._pos} unexpected trailing bytes"
            )

    def _unpack(self, fmt: str, size: int) -> int:
        return struct.unpack(fmt, self._take(size))[0]

    def _take(self, size: int) -> memoryview:
        if self._pos + size > len(self._data):
            raise FormatError(f"{self._what}: truncated after {self._pos} bytes")
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk
