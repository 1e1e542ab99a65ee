"""Client layer: the library face of laneway (``import laneway``)."""

from laneway.client.laneway import Laneway
from laneway.engine.bounded import gather_bounded

__all__ = ["Laneway", "gather_bounded"]
