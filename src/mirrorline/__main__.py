"""`python -m mirrorline` runs the command line."""

from mirrorline.cli.main import app

app()
