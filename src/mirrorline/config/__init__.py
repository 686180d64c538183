"""Mirrorline's configuration: MM2 properties files in, a typed, traceable model out.

    from mirrorline.config import load_config

    config = load_config("connect-mirror-maker.properties")
    for flow in config.enabled_flows():
        producer = confluent_kafka.Producer(dict(flow.client_settings("target", "producer")))

See `docs/configuration.md` for the file format and the precedence rules.
"""

from mirrorline.config.errors import ConfigError, ConfigIssue
from mirrorline.config.loader import load_config, parse_config
from mirrorline.config.model import (
    ClientSettings,
    ClientType,
    ClusterConfig,
    FlowConfig,
    MirrorConfig,
    Setting,
    Side,
)
from mirrorline.config.origin import Origin
from mirrorline.config.start_position import PartitionOffset, StartPosition

__all__ = [
    "ClientSettings",
    "ClientType",
    "ClusterConfig",
    "ConfigError",
    "ConfigIssue",
    "FlowConfig",
    "MirrorConfig",
    "Origin",
    "PartitionOffset",
    "Setting",
    "Side",
    "StartPosition",
    "load_config",
    "parse_config",
]
