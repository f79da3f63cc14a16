"""Everything between a preset and a file."""

__version__ = "0.2.0"
