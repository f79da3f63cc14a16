"""Everything between a preset and a file."""
