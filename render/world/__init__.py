"""The world a preset describes, as maps on the canvas: walls, the starting trail, food, spawn densities, and a batch's interaction and food tensors."""
