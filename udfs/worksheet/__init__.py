"""Worksheet-function declarations, one module per topic. Importing this package fills
`udfs.registry.REGISTRY`; nothing else lists the functions."""

from . import architecture, catalogs, compute, cost, economics, memory, picker, planning, serving, speed  # noqa: F401
