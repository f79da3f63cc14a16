"""What a render can write: one module per output format (its name, limits, spec and writer),
the registry that finds them, and the GIF bytes, worker pool and byte budget the GIF writer uses.
"""
