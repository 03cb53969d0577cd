"""Worksheet-function declarations, one module per topic. Importing this package fills
`udfs.registry.REGISTRY`; nothing else lists the functions."""

from . import (architecture, catalogs, compute, cost, define, economics, memory, picker, planning,  # noqa: F401
               serving, speed)
