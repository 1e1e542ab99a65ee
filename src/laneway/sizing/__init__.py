"""Lane sizing: a deadline, timeouts and retries chosen from measured latencies.

``laneway size`` reads a lane's recorded attempts from telemetry
(``samples``), replays them under candidate settings through the real call
loop in virtual time (``replay``, ``virtual``), scores and recommends
(``candidates``), or measures candidates live (``measure``). It sits beside
``chaos`` at the top of the layers: it drives the engine, as a caller would.
"""
