"""The `mirrorline` command line: one module per command group."""

from mirrorline.cli.help_format import show_flags_without_values

show_flags_without_values()
