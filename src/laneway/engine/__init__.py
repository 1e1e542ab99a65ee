"""Engine layer: the call loop that composes policies with a transport.

Depends on ``laneway.core``, ``laneway.policy``, ``laneway.config``,
``laneway.providers``, ``laneway.state`` and the transport port; never on
server or cli.
"""
