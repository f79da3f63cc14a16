"""The `physarum` command's entry (the console script, `python -m physarum.render.cli`): a
command that a running `physarum serve` can serve is handed to it (cli/resident.py), so that it
starts without importing torch; any other runs in this process (cli/main.py). This module
imports only what handing over needs."""

from __future__ import annotations

import sys

from . import resident


def run() -> None:
    """Run the command in sys.argv: served where a server takes it, else here."""
    code = resident.forward(sys.argv[1:])
    if code is not None:
        sys.stdout.flush()
        sys.exit(code)
    from .main import run as run_here  # start-up: the command's modules, only where not served

    run_here()
