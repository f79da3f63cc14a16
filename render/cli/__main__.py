"""`python -m physarum.render.cli`: the `physarum` command."""

import sys

from .main import main

sys.exit(main())
