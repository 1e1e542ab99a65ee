"""``laneway simulate``: named chaos scenarios run against ``laneway sim`` in real time.

Top layer, beside ``laneway.cli``: it drives the client library and the
engine against the simulator and measures what the upstream saw. Nothing
below it imports it.

Scenarios are plain data (``scenarios``) so that another client (the LiteLLM
comparison in ``bench/chaos_litellm.py``) can run exactly the same ones; the
metrics (``metrics``) are computed from call records and from the sim's own
hit log (``upstream``), so every client is measured by the same ruler.
"""
