"""Worksheet-function declarations, one module per topic. Importing this package fills
`udfs.api.registry.REGISTRY`; nothing else lists the functions."""

from . import (architecture, batch, catalogs, compute, cost, define, economics, energy, evidence, memory,  # noqa: F401 - imported to register
               picker, planning, serving, speed)
