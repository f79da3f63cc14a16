"""Draw the images the world presets use (presets/images/); run once, the PNGs are committed.

    python3 scripts/make_world_images.py

maze.png: a seeded recursive-backtracker maze, white walls on black (walls image);
word.png: the word "physarum", soft white on black (trail image and agent density);
food.png: soft bright dots on black (food image).
"""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

OUT = Path(__file__).resolve().parent.parent / "presets" / "images"


def maze(cells: int = 16, size: int = 1024, wall: int = 8, seed: int = 5) -> Image.Image:
    rng = random.Random(seed)
    open_east = [[False] * cells for _ in range(cells)]
    open_south = [[False] * cells for _ in range(cells)]
    seen, stack = {(0, 0)}, [(0, 0)]
    while stack:
        x, y = stack[-1]
        options = [
            (x + dx, y + dy)
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))
            if 0 <= x + dx < cells and 0 <= y + dy < cells and (x + dx, y + dy) not in seen
        ]
        if not options:
            stack.pop()
            continue
        nx, ny = rng.choice(options)
        if nx != x:
            open_east[y][min(x, nx)] = True
        else:
            open_south[min(y, ny)][x] = True
        seen.add((nx, ny))
        stack.append((nx, ny))
    image = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(image)
    step = size // cells
    for y in range(cells):
        for x in range(cells):
            left, top = x * step, y * step
            if not open_east[y][x] and x < cells - 1:
                draw.rectangle([left + step - wall // 2, top, left + step + wall // 2, top + step], fill=255)
            if not open_south[y][x] and y < cells - 1:
                draw.rectangle([left, top + step - wall // 2, left + step, top + step + wall // 2], fill=255)
    return image


def word(text: str = "physarum", size: tuple[int, int] = (1024, 512)) -> Image.Image:
    image = Image.new("L", size, 0)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=190)
    box = draw.textbbox((0, 0), text, font=font)
    at = ((size[0] - (box[2] - box[0])) // 2 - box[0], (size[1] - (box[3] - box[1])) // 2 - box[1])
    draw.text(at, text, fill=255, font=font)
    return image.filter(ImageFilter.GaussianBlur(6))


def food(size: int = 1024, seed: int = 2) -> Image.Image:
    rng = random.Random(seed)
    image = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(image)
    for _ in range(9):
        x, y, r = rng.randrange(100, size - 100), rng.randrange(100, size - 100), rng.randrange(12, 30)
        draw.ellipse([x - r, y - r, x + r, y + r], fill=255)
    return image.filter(ImageFilter.GaussianBlur(5))


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    maze().save(OUT / "maze.png", optimize=True)
    word().save(OUT / "word.png", optimize=True)
    food().save(OUT / "food.png", optimize=True)
    for path in sorted(OUT.glob("*.png")):
        print(path, path.stat().st_size)
