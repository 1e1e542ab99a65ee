"""Configuration: ``laneway.yaml`` parsed into strict, typed models.

Depends on ``laneway.core`` only. Every key has an effect; unknown keys are
errors naming the key and the line where it stands.
"""

from laneway.config.load import load_config, parse_config
from laneway.config.models import (
    BackoffConfig,
    ChatLaneConfig,
    EmbedLaneConfig,
    KeyConfig,
    LaneConfig,
    LanewayConfig,
    OcrLaneConfig,
    Secret,
    ServerConfig,
    SourceConfig,
)

__all__ = [
    "BackoffConfig",
    "ChatLaneConfig",
    "EmbedLaneConfig",
    "KeyConfig",
    "LaneConfig",
    "LanewayConfig",
    "OcrLaneConfig",
    "Secret",
    "ServerConfig",
    "SourceConfig",
    "load_config",
    "parse_config",
]
