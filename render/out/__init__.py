"""Frames into files: what an output is, the frame path and its encoder workers, the writers of each format, GIF bytes and budgets, raw fields."""
