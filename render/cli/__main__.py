"""`python -m physarum.render.cli`: the `physarum` command."""

from .entry import run

run()
