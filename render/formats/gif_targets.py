"""Named GIF byte budgets (output.gif_max_bytes, `render --gif-target`, and `--target` for a
platform that takes GIFs): a view of the one platform table, render/formats/targets.py's
PLATFORMS (each platform's video limits and GIF budget together, and when they were read);
docs/outputs.md, "Platform targets", says where each comes from. Decimal megabytes: the smaller
reading of "MB". Imports nothing heavy, so that `physarum --help` shows them without building the
preset schema (render/preset/output_sections.py validates budgets against them)."""

from .targets import GIF_TARGETS

__all__ = ["GIF_TARGETS"]
