"""Core layer: types, errors, clock and the transport port.

Imports nothing from the rest of laneway and does no I/O.
"""
