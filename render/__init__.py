"""Everything between a preset and a file."""

__version__ = "0.3.0"
