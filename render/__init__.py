"""Everything between a preset and a file."""

__version__ = "0.1.0"
