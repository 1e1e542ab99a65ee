"""Engine layer: the call loop that composes policies with a transport.

Depends on ``laneway.core``, ``laneway.policy``, ``laneway.config``,
``laneway.providers`` and the transport port; never on server or cli.
"""
