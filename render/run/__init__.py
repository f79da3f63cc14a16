"""A render from start to end: the runner that orchestrates the stages, the machine it runs on, and what `render`, `--from` and `--resume` render."""
