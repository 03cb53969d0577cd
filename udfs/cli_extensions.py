"""Subcommands added by the front ends. Each entry is a function that adds its parser to
the `flopsheet` sub-command set; their modules import heavy dependencies only when run."""

EXTENSIONS: list = []
