"""Client layer: the library face of laneway (``import laneway``)."""

from laneway.client.laneway import Laneway, gather_bounded

__all__ = ["Laneway", "gather_bounded"]
