"""`python -m physarum.render.cli`: the `physarum` command."""

import sys

from physarum.render.cli.main import main

sys.exit(main())
