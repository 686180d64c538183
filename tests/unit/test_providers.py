"""Config providers: ${env:...}, ${file:...:...} and ${directory:...:...}."""

from __future__ import annotations

from pathlib import Path

from mirrorline.config.errors import ConfigIssue
from mirrorline.config.origin import Origin
from mirrorline.config.providers import ProviderContext, resolve_placeholders

ORIGIN = Origin("mm2.properties", 7, "A.sasl.jaas.config")


def resolve(value: str, context: ProviderContext) -> tuple[str, bool, list[ConfigIssue]]:
    issues: list[ConfigIssue] = []
    text, used = resolve_placeholders(value, ORIGIN, context, issues)
    return text, used, issues


def test_env_placeholder_inside_a_larger_value() -> None:
    context = ProviderContext(environ={"PW": "s3cret"})
    text, used, issues = resolve('x password="${env:PW}";', context)
    assert (text, used, issues) == ('x password="s3cret";', True, [])


def test_value_without_placeholder_is_untouched() -> None:
    text, used, issues = resolve("plain ${not a placeholder", ProviderContext(environ={}))
    assert (text, used, issues) == ("plain ${not a placeholder", False, [])


def test_missing_env_var_names_variable_key_and_line() -> None:
    text, used, issues = resolve("${env:NOPE}", ProviderContext(environ={}))
    assert not used
    assert len(issues) == 1
    message = str(issues[0])
    assert message.startswith("mm2.properties:7: A.sasl.jaas.config: cannot resolve ${env:NOPE}")
    assert "NOPE is not set" in message


def test_file_provider_reads_a_properties_file_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "secrets.properties").write_text("east.password = p@ss\n", encoding="utf-8")
    context = ProviderContext(environ={}, base_dir=tmp_path)
    text, used, issues = resolve("${file:secrets.properties:east.password}", context)
    assert (text, used, issues) == ("p@ss", True, [])
    absolute = f"${{file:{tmp_path / 'secrets.properties'}:east.password}}"
    assert resolve(absolute, ProviderContext(environ={}))[0] == "p@ss"


def test_file_provider_missing_file_and_missing_key(tmp_path: Path) -> None:
    context = ProviderContext(environ={}, base_dir=tmp_path)
    _, _, issues = resolve("${file:nowhere.properties:k}", context)
    assert "cannot read properties file" in issues[0].message
    (tmp_path / "s.properties").write_text("other = 1\n", encoding="utf-8")
    _, _, issues = resolve("${file:s.properties:k}", context)
    assert "key 'k' is not in" in issues[0].message


def test_directory_provider_reads_a_file(tmp_path: Path) -> None:
    (tmp_path / "password").write_text("from-a-mounted-secret", encoding="utf-8")
    context = ProviderContext(environ={}, base_dir=tmp_path)
    assert resolve("${directory:.:password}", context)[0] == "from-a-mounted-secret"
    _, _, issues = resolve("${directory:.:missing}", context)
    assert "cannot read" in issues[0].message


def test_unknown_provider_is_an_error() -> None:
    _, _, issues = resolve("${vault:secret/data:pw}", ProviderContext(environ={}))
    assert "unknown config provider 'vault'" in issues[0].message
