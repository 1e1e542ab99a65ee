"""A LiteLLM proxy config as an equivalent ``laneway.yaml`` (``translate``)."""

from laneway.migrate.litellm.shared import Translation
from laneway.migrate.litellm.translate import translate

__all__ = ["Translation", "translate"]
