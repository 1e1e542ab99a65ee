"""Engine layer: the call loop that composes policies with a transport.

Depends on ``laneway.core``, ``laneway.policy``, the ports of
``laneway.providers``, ``laneway.state`` and ``laneway.cache``, and the
transport port; never on server or cli, nor on the configuration's models:
it runs on the frozen settings ``laneway.app`` translates them into
(``engine.settings``).
"""
