"""The carried images block: what it holds, and that reading it back trusts nothing (sizes checked
before decompressing, the hash verified, damage named)."""

from __future__ import annotations

import bz2
import hashlib

import numpy as np
import pytest
import yaml

from physarum.render.preset import build_preset, carried
from physarum.render.preset.images import allowed_pixels, canvas_image, read_grey
from physarum.render.preset.provenance import embedded_text
from support import tiny_data, world_data


def grey(height: int = 20, width: int = 30, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width), dtype=np.uint8)


def test_a_block_gives_back_the_pixels_it_carries_and_their_pgm_hash():
    images = [("walls.png", grey()), ("sub/trail.png", grey(7, 9, seed=1))]
    found = carried.read_block(carried.block(images))
    assert list(found) == ["walls.png", "sub/trail.png"]
    for path, pixels in images:
        image = found[path]
        assert (image.width, image.height) == (pixels.shape[1], pixels.shape[0])
        assert image.sha256 == hashlib.sha256(carried.pgm(pixels)).hexdigest()
        assert np.array_equal(image.pixels(), pixels)
    assert carried.pgm(images[1][1]).startswith(b"P5\n9 7\n255\n")


def test_a_world_preset_carries_its_images_after_its_text_and_a_plain_one_nothing(images):
    preset = build_preset(world_data(), str(images / "preset.yaml"))
    text = embedded_text(preset)
    preset_text, block = carried.split(text)
    assert yaml.safe_load(text) == yaml.safe_load(preset_text)  # the block is YAML comments
    found = carried.read_block(block)
    assert np.array_equal(found[preset.world.walls.path].pixels(), read_grey(str(images / "wall.png")))
    assert len(found) == 3  # walls, trail image, the second species' spawn image
    plain = embedded_text(build_preset(tiny_data(), "tiny.yaml"))
    assert carried.MARK not in plain and carried.split(plain) == (plain, None)


def test_a_description_naming_the_mark_does_not_start_a_block():
    preset = build_preset(tiny_data(description=f"a\n{carried.MARK}1\n# end"), "tiny.yaml")
    text = embedded_text(preset)
    assert carried.split(text) == (text, None)


def damaged(block: str, old: str, new: str) -> str:
    assert old in block
    return block.replace(old, new, 1)


@pytest.fixture
def one_block() -> str:
    return carried.block([("walls.png", grey())])


def test_a_hash_that_does_not_match_is_refused_when_the_pixels_are_read(one_block):
    digest = hashlib.sha256(carried.pgm(grey())).hexdigest()
    image = carried.read_block(damaged(one_block, digest, "0" * 64))["walls.png"]
    with pytest.raises(ValueError, match="does not match its sha256 0000"):
        image.pixels()


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda b: b.rsplit("\n", 2)[0] + "\n", "cut short"),  # the end line lost
        (lambda b: "\n".join(b.split("\n")[:2] + b.split("\n")[3:]), "bytes, its header says"),  # a line lost
        (lambda b: damaged(b, "\n# end", "*\n# end"), "is not base64"),
        (lambda b: damaged(b, '"bytes": ', '"bytes": 1'), "its header says"),
        (lambda b: damaged(b, '"width": 30', '"width": "30"'), "width is no int"),
        (lambda b: damaged(b, '"width": 30', '"width": 9999999'), "an image has 1 to"),
        (lambda b: damaged(b, "images 1", "images 7"), "format '7'"),
        (lambda b: damaged(b, "# image {", "# image ["), "is not JSON"),
        (lambda b: damaged(b, "# image {", "# image " + "[" * 50_000 + "{"), "nests 50001 levels deep"),
        (lambda b: damaged(b, '"path": "walls', '"path": "wa\\u0000lls'), "and no NUL character, got"),
    ],
)
def test_a_damaged_block_is_named(one_block, change, says):
    with pytest.raises(ValueError, match=says.replace("(", r"\(")):
        carried.read_block(change(one_block))


def test_data_that_is_not_the_image_its_header_names_is_refused_without_decompressing_it_all():
    """A bomb: a few hundred bytes that decompress to 64 MiB, under a header naming 8x8 pixels."""
    bomb = bz2.compress(b"P5\n8 8\n255\n" + bytes(64 << 20))
    assert len(bomb) < 1000
    image = carried.CarriedImage("walls.png", 8, 8, "0" * 64, bomb)
    with pytest.raises(ValueError, match="not the 8x8 image its header names"):
        image.pixels()
    with pytest.raises(ValueError, match="not bzip2"):
        carried.CarriedImage("walls.png", 8, 8, "0" * 64, b"not bzip2 at all").pixels()


def test_an_image_larger_than_its_canvas_allows_is_refused_before_it_is_decoded():
    class Untouchable(carried.CarriedImage):
        def pixels(self):
            raise AssertionError("decoded")

    side = 4096  # 16 Mi pixels: more than a 64x64 canvas allows
    assert side * side > allowed_pixels(64, 64)
    image = Untouchable("big.png", side, side, "0" * 64, b"")
    with pytest.raises(ValueError, match="the most allowed on this canvas"):
        canvas_image("big.png", 64, 64, {"big.png": image})


def test_a_block_over_the_limit_is_refused_both_ways(one_block, monkeypatch):
    monkeypatch.setattr(carried, "MAX_CARRIED_BYTES", len(one_block) - 1)
    with pytest.raises(ValueError, match=f"at most {len(one_block) - 1} are read"):
        carried.read_block(one_block)
    with pytest.raises(ValueError, match="shrink the images"):
        carried.block([("walls.png", grey())])
