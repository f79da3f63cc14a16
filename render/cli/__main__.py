"""`python -m physarum.render.cli`: the `physarum` command."""

from .main import run

run()
