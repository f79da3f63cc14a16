"""World and species sections: image paths made absolute, and one clear error for every kind of
bad world input, writing nothing."""

from __future__ import annotations

import pytest
import yaml

from physarum.kernels import spawn as spawning
from physarum.render.cli.main import main
from physarum.render.preset import build_preset
from support import TWO_SPECIES, tiny_data, world_data, write_preset


def test_a_world_preset_validates_with_paths_made_absolute(images):
    preset = build_preset(world_data(), str(images / "p.yaml"))
    assert preset.world.walls.path == str(images / "wall.png")
    assert preset.species[1].agents.image == str(images / "square.png")
    assert preset.species_count == 2 and preset.agents_per_species == 200 and preset.boundary == "reflect"
    assert preset.species_model(1).sensor_angle == 40 and preset.species_model(0).sensor_angle == 22.5
    assert preset.model_params(1).seed == spawning.species_seed(3, 1) and preset.model_params(0).seed == 3
    again = build_preset(yaml.safe_load(preset.to_yaml()), "elsewhere/p.yaml")  # absolute: stays
    assert again == preset


BAD = {
    "missing image": (
        {"world": {"trail_image": {"path": "nope.png"}}},
        ["world.trail_image.path: no such image file: ", "nope.png"],
    ),
    "folder": (
        {"world": {"walls": {"path": "folder.png"}}},
        ["world.walls.path: ", "folder.png is a folder, not an image file"],
    ),
    "not an image": (
        {"world": {"food": {"image": {"path": "notes.txt"}}}},
        ["world.food.image.path: ", "notes.txt is not an image file Pillow can read"],
    ),
    "corrupt image": (
        {"agents": {"spawn": "image", "image": "broken.png"}},
        ["agents.image: ", "broken.png"],
    ),
    "interaction shape": (
        {"species": TWO_SPECIES, "interaction": [[1, 0], [0, 1], [1, 1]]},
        ["interaction: must be 2 x 2", "found 3 x 2"],
    ),
    "ragged interaction": (
        {"species": TWO_SPECIES, "interaction": [[1, 0], [0]]},
        ["interaction: must be 2 x 2", "found 2 rows of 1, 2"],
    ),
    "interaction without species": ({"interaction": [[1.0]]}, ["interaction: needs a species list"]),
    "all wall": (
        {"world": {"walls": {"path": "black.png", "threshold": 1, "invert": True}}},
        ["world.walls: every cell is a wall", "invert: true"],
    ),
    "count and density": (
        {"agents": {"count": 100, "density": 0.5}},
        ["agents: give count or density, not both (got {'count': 100"],
    ),
    "food point outside": (
        {"world": {"food": {"points": [{"x": 1.5, "y": 0.5}]}}},
        ["world.food.points.0.x: Input should be less than or equal to 1 (got 1.5)"],
    ),
    "image spawn without image": (
        {"agents": {"spawn": "image"}},
        ["agents.image: spawn: image needs an image"],
    ),
    "black spawn image": (
        {"agents": {"spawn": "image", "image": "black.png"}},
        ["agents.image: the image is black everywhere"],
    ),
    "too many species": ({"species": [{}] * 5}, ["species: List should have at most 4 items"]),
    "unknown world key": (
        {"world": {"boundry": "wrap"}},
        ["world.boundry: unknown key; did you mean 'boundary'?"],
    ),
    "bad boundary": (
        {"world": {"boundary": "torus"}},
        ["world.boundary: Input should be 'wrap', 'reflect' or 'clamp'"],
    ),
    "species colour and palette": (
        {"species": [{"colour": "#fff", "palette": "ice"}]},
        ["species.0: give colour or palette, not both"],
    ),
    "short side too far": (
        {"model": {"units": "short_side", "sensor_distance": 0.5}},
        ["model.sensor_distance: must be less than half", "16 pixels with units: short_side"],
    ),
    "diffuse beyond the canvas": (
        {
            "canvas": {"width": 2048, "height": 1024},
            "model": {"units": "short_side", "sensor_distance": 0.01, "diffuse": 0.5},
        },
        ["model.diffuse: with units: short_side", "it becomes 2, more than 1: use at most 0.25"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_cli_world_errors_exit_2_name_the_problem_and_write_nothing(case, images, capsys):
    sections, expected = BAD[case]
    data = {**tiny_data(), **sections}  # sections replace tiny's
    path = write_preset(images, data)
    out = images / "out"
    assert main(["render", str(path), "--out", str(out), "--quiet", "--backend", "torch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: ") and "Traceback" not in err, err
    for text in expected:
        assert text in err, (text, err)
    assert not out.exists()
    assert main(["validate", str(path)]) == 2
    assert expected[0] in capsys.readouterr().err


@pytest.mark.parametrize(
    "case, file_name",
    [
        ("missing image", "nope.png"),
        ("folder", "folder.png"),
        ("not an image", "notes.txt"),
        ("corrupt image", "broken.png"),
    ],
)
def test_an_image_file_message_names_the_file_once(case, file_name, images, capsys):
    """The message of a bad image file names its path in its own words, once: no '(got ...)'
    quote of the same path after it."""
    path = write_preset(images, {**tiny_data(), **BAD[case][0]})
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "(got " not in err and err.count(file_name) == 1, err
