"""The `mirrorline` command line: one module per command group."""
