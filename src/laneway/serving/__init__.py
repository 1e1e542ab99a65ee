"""The serving process: one or more uvicorn processes over gateways swapped on reload.

The parts, each handed what it runs (the composition root, ``laneway.app``,
builds the gateways and wires these in ``app.serving``; ``laneway serve``
is the command over them):

- ``settings``: uvicorn on uvloop and httptools with laneway's protocol, the
  connection limits and the logging ``laneway serve`` uses.
- ``generations``: ``ReloadingGateway``, the ASGI app over successive configs'
  gateways, each request on the one current when it came, the old drained.
- ``reloader``: SIGHUP in a serving process: the next config read, checked
  (by the check it is given), built (by the composer it is given), swapped in.
- ``published``: the config the ``--workers`` supervisor checked, published
  to its workers, and their acknowledgements.
- ``supervisor``: uvicorn's supervisor with SIGHUP as a reload of every
  worker; ``forking``: its workers forked from a frozen heap, sharing pages.
- ``rundir``: the status file ``laneway reload`` reads, and ``--pidfile``.
"""
