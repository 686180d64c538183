"""Reading the Java client's `sasl.jaas.config` so it can be translated for librdkafka.

A Kafka client's JAAS entry looks like

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="alice" password="s3cret";

that is: a login module class, a control flag, `name=value` options (values
quoted with `"` or `'`, or bare words) and a final `;`. A client accepts
exactly one entry. Errors never quote the text: it holds credentials.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["JaasEntry", "parse_jaas"]

_FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass(frozen=True, repr=False)
class JaasEntry:
    """One JAAS login module entry. Its `repr` names the options but hides their values."""

    module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        names = ", ".join(sorted(self.options))
        return f"JaasEntry({self.module} {self.flag}; options: {names})"

    @property
    def module_name(self) -> str:
        """The class name without its package (`PlainLoginModule`)."""
        return self.module.rsplit(".", 1)[-1]


def parse_jaas(text: str) -> JaasEntry:
    """Parse a single JAAS entry; raise `ValueError` with a reason that quotes nothing."""
    tokens = _tokenize(text)
    if tokens and tokens[-1] == _END:
        tokens = tokens[:-1]
    if _END in tokens:
        raise ValueError("holds more than one login module; a Kafka client takes exactly one")
    if len(tokens) < 2 or _EQUALS in tokens[:2]:
        raise ValueError(
            "is not a JAAS entry (expected: LoginModuleClass required name=value ...;)"
        )
    (_, module), (_, flag), *rest = tokens
    if flag.lower() not in _FLAGS:
        raise ValueError(f"has no control flag after the login module ({', '.join(_FLAGS)})")
    if len(rest) % 3 != 0:
        raise ValueError("has an option that is not written name=value")
    options: dict[str, str] = {}
    for index in range(0, len(rest), 3):
        name, equals, value = rest[index : index + 3]
        if equals != _EQUALS or name[0] != "word" or value[0] != "word":
            raise ValueError("has an option that is not written name=value")
        options[name[1]] = value[1]
    return JaasEntry(module, flag.lower(), options)


_Token = tuple[str, str]
_EQUALS: _Token = ("symbol", "=")
_END: _Token = ("symbol", ";")


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char.isspace():
            pos += 1
        elif char in "=;":
            tokens.append(("symbol", char))
            pos += 1
        elif char in "\"'":
            end = pos + 1
            value: list[str] = []
            while end < len(text) and text[end] != char:
                if text[end] == "\\" and end + 1 < len(text):
                    end += 1
                value.append(text[end])
                end += 1
            if end >= len(text):
                raise ValueError("has an unterminated quoted value")
            tokens.append(("word", "".join(value)))
            pos = end + 1
        else:
            end = pos
            while end < len(text) and not text[end].isspace() and text[end] not in "=;\"'":
                end += 1
            tokens.append(("word", text[pos:end]))
            pos = end
    return tokens
