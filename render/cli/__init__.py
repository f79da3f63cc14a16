"""The `physarum` command: its flags and the one function each subcommand calls."""
