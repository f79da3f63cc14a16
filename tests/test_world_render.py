"""Worlds on the render side: the preset schema and its errors, images and maps, species colours,
renders of world presets (formats, reproducibility, --from, batches). CPU, torch backend."""

from __future__ import annotations

import importlib.util
import json
import os
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from physarum.kernels import exact
from physarum.kernels.spawn import spawn, species_seed
from physarum.render import machine, runner
from physarum.render import sweep as sweeps
from physarum.render.cli import main
from physarum.render.colour import (
    PRODUCT_LEVELS,
    SpeciesColourist,
    make_colourist,
    product_palette,
    species_ramp,
)
from physarum.render.preset import Palette, PresetError, build_preset
from physarum.render.world import box_resize, point_cells, spawn_groups, wall_cells
from support import tiny_data


def save_image(path: Path, pixels, mode: str = "L") -> Path:
    Image.fromarray(np.asarray(pixels, dtype=np.uint8), mode).save(path)
    return path


@pytest.fixture
def images(tmp_path):
    """Small images beside the presets: a left-third wall, a horizontal gradient, black."""
    wall = np.zeros((20, 30), np.uint8)
    wall[:, :10] = 255
    save_image(tmp_path / "wall.png", wall)
    save_image(tmp_path / "gradient.png", np.tile(np.arange(0, 256, 4, dtype=np.uint8), (40, 1)))
    save_image(tmp_path / "black.png", np.zeros((8, 8)))
    rgb = np.zeros((16, 16, 3), np.uint8)
    rgb[4:12, 4:12] = (255, 255, 255)
    save_image(tmp_path / "square.png", rgb, "RGB")
    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    (tmp_path / "folder.png").mkdir()
    return tmp_path


WORLD = {
    "boundary": "reflect",
    "walls": {"path": "wall.png"},
    "trail_image": {"path": "gradient.png", "scale": 2.0},
    "food": {"points": [{"x": 0.75, "y": 0.5, "radius": 0.1, "amount": 2.0}]},
}
TWO_SPECIES = [
    {"name": "red", "colour": "#ff4030"},
    {
        "name": "ice",
        "palette": "ice",
        "model": {"sensor_angle": 40},
        "agents": {"spawn": "image", "image": "square.png"},
    },
]


def world_data(**sections) -> dict:
    data = tiny_data(
        name="world",
        world=WORLD,
        species=TWO_SPECIES,
        interaction=[[1.0, -0.5], [-0.5, 1.0]],
        run={"steps": 12, "steps_per_frame": 3},
    )
    data.update(sections)
    return data


def write_preset(folder: Path, data: dict, name: str = "preset.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def problems(folder: Path, data: dict) -> list[str]:
    with pytest.raises(PresetError) as error:
        build_preset(data, str(folder / "p.yaml"))
    return error.value.problems


# ---------------------------------------------------------------------------------------------
# Schema and errors


def test_a_world_preset_validates_with_paths_made_absolute(images):
    preset = build_preset(world_data(), str(images / "p.yaml"))
    assert preset.world.walls.path == str(images / "wall.png")
    assert preset.species[1].agents.image == str(images / "square.png")
    assert preset.species_count == 2 and preset.agents_per_species == 200 and preset.boundary == "reflect"
    assert preset.species_model(1).sensor_angle == 40 and preset.species_model(0).sensor_angle == 22.5
    assert preset.model_params(1).seed == species_seed(3, 1) and preset.model_params(0).seed == 3
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


def test_every_problem_at_once_images_among_them(images):
    found = problems(
        images,
        tiny_data(
            world={"trail_image": {"path": "nope.png"}, "walls": {"path": "notes.txt"}},
            species=TWO_SPECIES,
            interaction=[[1.0]],
            model={"decay": 2},
        ),
    )
    joined = "\n".join(found)
    assert len(found) == 3, joined  # schema errors: the two images and the decay
    assert "nope.png" in joined and "notes.txt" in joined and "model.decay" in joined
    found = problems(
        images,
        tiny_data(species=TWO_SPECIES, interaction=[[1.0]], agents={"spawn": "image", "image": "black.png"}),
    )
    assert len(found) == 2 and "interaction" in found[0] and "black everywhere" in found[1]


def test_density_gives_the_count_exactly_and_round_trips():
    canvas = {"width": 8, "height": 8}
    for density, count in [(0.5, 32), (1 / 128, 1), (3 / 128, 2), (5 / 128, 2), (7 / 128, 4)]:
        preset = build_preset(
            {**tiny_data(canvas=canvas, model={"sensor_distance": 3}), "agents": {"density": density}},
            "p.yaml",
        )
        assert preset.agents.count == count == max(1, round(Fraction(density) * 64))
        dumped = yaml.safe_load(preset.to_yaml())["agents"]
        assert "count" not in dumped and dumped["density"] == density
        assert build_preset(yaml.safe_load(preset.to_yaml()), "p.yaml") == preset
    assert build_preset({**tiny_data(), "agents": {"density": 0.5}}, "p").agents.count == 768  # 48 x 32 / 2
    too_many = problems(
        Path("."), {**tiny_data(canvas={"width": 16384, "height": 16384}), "agents": {"density": 2.0}}
    )
    assert any("agents.density: gives 536870912 agents" in p for p in too_many)


def test_short_side_density_counts_agents_per_canvas_area_not_per_pixel():
    """With units: short_side a density is per pixel of a 512-pixel short side: the same count on
    every canvas of one shape, in proportion to the area in short sides squared on others."""

    def count(width, height, units="short_side"):
        data = {
            **tiny_data(
                canvas={"width": width, "height": height},
                model={"units": units, "sensor_distance": 0.01, "step_size": 0.001, "diffuse": 0.05},
            ),
            "agents": {"density": 0.5},
        }
        return build_preset(data, "p.yaml").agents.count

    assert count(512, 512) == count(1024, 1024) == count(2048, 2048) == 131072  # 0.5 * 512^2
    assert count(1024, 512) == count(2048, 1024) == count(512, 256) == 262144  # two squares
    assert count(3840, 2160) == round(Fraction(0.5) * 3840 * 2160 * Fraction(512, 2160) ** 2) == 233017
    assert count(1024, 1024, units="pixels") == 524288  # per pixel of this canvas


def test_short_side_units_convert_exactly():
    preset = build_preset(
        tiny_data(model={"units": "short_side", "sensor_distance": 0.25, "step_size": 0.1}), "p.yaml"
    )
    params = preset.model_params()
    assert params.sensor_distance == 8.0  # 0.25 of 32
    assert params.step_size == float(Fraction(0.1) * 32) == 3.2
    assert "units" not in yaml.safe_dump(build_preset(tiny_data(), "p").model_dump())
    species = build_preset(
        tiny_data(
            species=[{}, {"model": {"units": "short_side", "sensor_distance": 0.125, "step_size": 0.03125}}]
        ),
        "p.yaml",
    )
    assert species.model_params(0).sensor_distance == 5.0 and species.model_params(1).sensor_distance == 4.0


def test_short_side_units_scale_diffusion_with_the_canvas_area():
    """The 3x3 blend spreads trail a fixed number of pixels a step: k times the short side
    needs k^2 times the diffusion (given for a 512-pixel short side)."""

    def diffuse(short: int, value: float, units: str = "short_side") -> float:
        data = tiny_data(
            canvas={"width": short, "height": short},
            model={"units": units, "sensor_distance": 0.01, "step_size": 0.002, "diffuse": value},
        )
        return build_preset(data, "p.yaml").model_params().diffuse

    assert diffuse(512, 0.05) == 0.05 and diffuse(1024, 0.05) == 0.2 and diffuse(256, 0.4) == 0.1
    assert diffuse(2160, 0.05) == float(Fraction(0.05) * Fraction(2160, 512) ** 2)
    assert diffuse(1024, 0.05, units="pixels") == 0.05


def test_plain_presets_dump_and_build_as_before(tiny_preset):
    assert set(tiny_preset.model_dump()) == {
        "name",
        "description",
        "seed",
        "canvas",
        "agents",
        "model",
        "run",
        "palette",
        "output",
    }
    assert set(tiny_preset.model_dump()["agents"]) == {"count", "spawn", "radius"}
    state, params, world = spawn_groups([tiny_preset])
    assert world is None and params == [tiny_preset.model_params()]
    plain = spawn([3], 400, 48, 32, "random", 0.35)
    assert torch.equal(state.position, plain.position) and torch.equal(state.heading, plain.heading)
    assert runner.batch_key(tiny_preset) == (48, 32, 400, 24, 3, 0)


# ---------------------------------------------------------------------------------------------
# Images and maps


def test_box_resize_is_an_exact_area_average():
    assert box_resize(np.array([[0, 30, 90]], np.uint8), 2, 1).tolist() == [[10, 70]]  # (2a+b)/3, (b+2c)/3
    assert box_resize(np.array([[0, 1], [0, 0]], np.uint8), 1, 1).tolist() == [[0]]  # 0.25 -> 0
    assert box_resize(np.array([[0, 1], [0, 1]], np.uint8), 1, 1).tolist() == [[1]]  # 0.5 -> 1 (half up)
    assert box_resize(np.array([[7, 200]], np.uint8), 4, 2).tolist() == [[7, 7, 200, 200]] * 2
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, (37, 53), dtype=np.uint8)
    small = box_resize(pixels, 11, 7)
    exact = Fraction(int(pixels[:, :].astype(np.int64).sum()), pixels.size)
    assert abs(Fraction(int(small.astype(np.int64).sum()), small.size) - exact) < 1
    assert box_resize(pixels, 53, 37) is pixels


def test_walls_threshold_invert_and_colour_images(images):
    def walls(**spec):
        return wall_cells(
            build_preset(tiny_data(world={"walls": {"path": "wall.png", **spec}}), str(images / "p.yaml"))
        )

    wall = walls()
    assert wall.shape == (32, 48) and wall[:, :16].all() and not wall[:, 16:].any()
    assert (walls(invert=True) == ~wall).all()
    square = wall_cells(
        build_preset(tiny_data(world={"walls": {"path": "square.png"}}), str(images / "p.yaml"))
    )  # RGB: converted to greyscale
    assert square[8:24, 12:36].all() and not square[:8].any() and square.sum() == 16 * 24


def test_initial_trail_food_and_image_spawn(images):
    preset = build_preset(world_data(), str(images / "p.yaml"))
    state, params, world = spawn_groups([preset])
    assert state.batch == 2 and state.agents == 200 and world.species == 2 and world.boundary == "reflect"
    gradient = box_resize(np.tile(np.arange(0, 256, 4, dtype=np.uint8), (40, 1)), 48, 32)
    expected = exact.brightness_table(2.0)[torch.from_numpy(gradient).long()]
    expected[:, :16] = 0  # no trail on walls
    assert torch.equal(state.trail[0], expected) and torch.equal(state.trail[1], expected)
    assert world.wall.shape == (1, 32, 48) and world.wall.dtype == torch.uint8 and world.wall[0, :, :16].all()
    assert world.mix.tolist() == [[1.0, -0.5], [-0.5, 1.0]]
    cells = torch.from_numpy(point_cells(0.75, 0.5, 0.1, 48, 32))
    assert world.food.shape == (2, 32, 48) and bool((world.food[0][cells] == 2.0).all())
    assert bool((world.food[0][~cells] == 0).all()) and torch.equal(world.food[0], world.food[1])
    x, y = state.position[1, 0] >> 16, state.position[1, 1] >> 16  # species 1 spawns on the square
    on_square = (x >= 12) & (x < 36) & (y >= 8) & (y < 24)
    assert int(on_square.sum()) > 150 and bool((x >= 16).all())  # those on the wall: moved off
    assert bool(((state.position[0, 0] >> 16) >= 16).all())  # species 0 too
    # a point's disk, hand-checked: centre (36, 16), radius 3.2 cells
    inside = point_cells(0.75, 0.5, 0.1, 48, 32)
    assert (
        inside[16, 36] and inside[18, 37] and not inside[18, 38] and not inside[16, 39] and inside.sum() == 32
    )
    assert point_cells(0.0, 0.0, 0.0, 8, 8).sum() == 1 and point_cells(1.0, 1.0, 0.0, 8, 8)[7, 7]


# ---------------------------------------------------------------------------------------------
# Species colours


def fixed_levels() -> Palette:
    """low 0, high 255, gamma 1: a trail value v (integer) shows at level v exactly."""
    return Palette(levels={"low": 0.0, "high": 255.0}, gamma=1.0)


def test_species_blend_and_product_index_by_hand():
    ramps = np.stack([species_ramp("#ff0000", None), species_ramp("#0080ff", None)])
    colourist = SpeciesColourist(fixed_levels(), ramps)
    maps = torch.tensor([[[100.0, 255.0, 0.0]], [[200.0, 255.0, 0.0]]])  # [S=2, H=1, W=3]
    assert colourist.level_frames(maps).tolist() == [[[100, 255, 0]], [[200, 255, 0]]]
    index, rgb = colourist.colour(maps, 0)
    # (100*255//255, 0, 0) + (0, 200*128//255, 200*255//255); saturating at 255; black
    assert rgb.tolist() == [[[100, 100, 200], [255, 128, 255], [0, 0, 0]]]
    # q = level * 16 // 256: (6, 12) -> 6 + 12 * 16; (15, 15) -> 255
    assert index.tolist() == [[6 + 12 * 16, 255, 0]]
    table = colourist.table(7)
    assert table[198].tolist() == [102, 102, 204]  # representative levels 6*255//15, 12*255//15
    assert table[255].tolist() == [255, 128, 255] and table[0].tolist() == [0, 0, 0]


def test_product_palettes_for_three_and_four_species():
    for species, k in ((1, 256), (2, 16), (3, 6), (4, 4)):
        assert PRODUCT_LEVELS[species] == k and k**species <= 256
    ramps = np.stack([species_ramp(c, None) for c in ("#ff0000", "#00ff00", "#0000ff")])
    table = product_palette(ramps)
    assert (
        table[1].tolist() == [51, 0, 0]
        and table[6].tolist() == [0, 51, 0]
        and table[36].tolist() == [0, 0, 51]
    )
    assert table[215].tolist() == [255, 255, 255] and not table[216:].any()
    one = SpeciesColourist(fixed_levels(), np.stack([species_ramp(None, "ice")]))
    trail = torch.tensor([[[3.0, 77.0, 255.0]]])
    index, rgb = one.colour(trail, 0)
    assert index.tolist() == [[3, 77, 255]] and (one.table(0) == species_ramp(None, "ice")).all()


def test_default_species_colours_and_palettes(images):
    preset = build_preset(tiny_data(species=[{}, {"palette": ["#000", "#0f0"]}]), "p.yaml")
    colourist = make_colourist(preset)
    assert colourist.ramps[0][255].tolist() == [255, 90, 31] and colourist.ramps[1][255].tolist() == [
        0,
        255,
        0,
    ]


# ---------------------------------------------------------------------------------------------
# Renders


def render(preset, out: Path):
    return runner.render(preset, backend="torch", device="cpu", out_dir=out, quiet=True)


def test_two_species_render_writes_gif_mp4_png_and_repeats_exactly(images):
    preset = build_preset(world_data(), str(images / "p.yaml"))
    first = render(preset, images / "a").outputs
    with Image.open(first["gif"]) as gif:
        assert gif.n_frames == 4 and gif.size == (48, 32)
        palette = np.array(gif.getpalette()[:768], dtype=np.uint8).reshape(256, 3)
        assert (palette == make_colourist(preset).table(0)).all()
    with av.open(str(first["mp4"])) as container:
        assert sum(1 for _ in container.decode(video=0)) == 4
    with Image.open(first["png"]) as png:
        pixels = np.asarray(png.convert("RGB"))
        assert pixels.shape == (32, 48, 3) and not pixels[:, :16].any() and pixels[:, 16:].any()
    second = render(preset, images / "b").outputs
    for fmt in ("gif", "mp4", "png"):
        assert first[fmt].read_bytes() == second[fmt].read_bytes(), fmt
    sidecar = json.loads(first["json"].read_text())
    assert sidecar["preset"]["world"]["walls"]["path"] == str(images / "wall.png")


def test_render_from_a_world_output_reproduces_it(images, monkeypatch):
    path = write_preset(images, world_data())
    assert main(["render", str(path), "--out", str(images / "a"), "--quiet", "--backend", "torch"]) == 0
    monkeypatch.chdir(images / "folder.png")  # --from elsewhere: the outputs carry absolute paths
    original = images / "a" / "world" / "world-s3.gif"
    assert (
        main(["render", "--from", str(original), "--out", str(images / "b"), "--quiet", "--backend", "torch"])
        == 0
    )
    for fmt in ("gif", "mp4", "png"):
        name = f"world-s3.{fmt}"
        assert (images / "a" / "world" / name).read_bytes() == (images / "b" / "world" / name).read_bytes()


def test_a_batch_of_world_presets_renders_each_as_alone(images):
    second_world = {**WORLD, "walls": {"path": "wall.png", "invert": True}, "trail_image": None}
    presets = [
        build_preset(world_data(name="one"), str(images / "p.yaml")),
        build_preset(
            world_data(name="two", seed=8, world=second_world, interaction=[[1.0, 0.25], [2.0, -1.0]]),
            str(images / "p.yaml"),
        ),
    ]
    assert runner.batch_key(presets[0]) == runner.batch_key(presets[1])
    batch = runner.render_batch(presets, backend="torch", device="cpu", out_dir=images / "batch", quiet=True)
    assert [r.error for r in batch] == [None, None]
    for preset, result in zip(presets, batch):
        alone = render(preset, images / "alone").outputs
        for fmt in ("gif", "png"):  # MP4 bytes: see test_sweep's batch test (x264 per process)
            assert result.outputs[fmt].read_bytes() == alone[fmt].read_bytes(), (preset.name, fmt)
    assert batch[0].outputs["png"].read_bytes() != batch[1].outputs["png"].read_bytes()


def test_batch_key_separates_world_shapes(images):
    base = runner.batch_key(build_preset(world_data(), str(images / "p.yaml")))
    others = [
        world_data(species=[{}, {}, {}], interaction=None),
        world_data(world={**WORLD, "boundary": "clamp"}),
        world_data(world={**WORLD, "walls": None}),
        world_data(world={**WORLD, "food": None}),
    ]
    keys = {runner.batch_key(build_preset(d, str(images / "p.yaml"))) for d in others}
    assert base not in keys and len(keys) == 4
    plain = runner.batch_key(build_preset(tiny_data(), "p"))
    image_trail = runner.batch_key(
        build_preset(tiny_data(world={"trail_image": {"path": "gradient.png"}}), str(images / "p.yaml"))
    )
    assert plain == image_trail  # only the initial trail differs: one batch


def test_memory_estimate_counts_groups_and_maps(images):
    plain = build_preset(tiny_data(), "p")
    world = build_preset(world_data(), str(images / "p.yaml"))
    assert machine.estimated_bytes(world, "torch") > machine.estimated_bytes(plain, "torch")
    four = build_preset(tiny_data(species=[{}] * 4), "p")
    assert machine.estimated_bytes(four, "torch", 2) > machine.estimated_bytes(plain, "torch", 2)


def test_stats_use_species_0_and_sensitivity_refuses_worlds(images, capsys):
    path = write_preset(images, world_data())
    assert (
        main(["render", str(path), "--out", str(images / "out"), "--quiet", "--backend", "torch", "--stats"])
        == 0
    )
    assert (images / "out" / "world" / "world-s3.stats.csv").read_text().count("\n") == 13
    capsys.readouterr()
    assert main(["sensitivity", str(path), "--steps", "2", "--out", str(images / "sens")]) == 2
    assert "physarum sensitivity measures plain presets" in capsys.readouterr().err
    assert not (images / "sens").exists()


def test_sweep_of_a_world_base_preset_finds_its_images(images):
    (images / "presets").mkdir()
    base = world_data()
    base["world"] = {**WORLD, "walls": {"path": "../wall.png"}, "trail_image": {"path": "../gradient.png"}}
    base["species"] = [
        TWO_SPECIES[0],
        {**TWO_SPECIES[1], "agents": {"spawn": "image", "image": "../square.png"}},
    ]
    write_preset(images / "presets", base, "base.yaml")
    sweep_file = images / "sweeps" / "s.yaml"
    sweep_file.parent.mkdir()
    sweep_file.write_text(
        yaml.safe_dump(
            {"name": "s", "base": "../presets/base.yaml", "grid": {"world.boundary": ["wrap", "clamp"]}}
        )
    )
    sweep = sweeps.load_sweep(sweep_file)
    assert [job.preset.world.walls.path for job in sweep.jobs] == [str(images / "wall.png")] * 2
    assert len({runner.batch_key(job.preset) for job in sweep.jobs}) == 2  # boundaries: two batches
    assert (
        main(
            [
                "sweep",
                str(sweep_file),
                "--out",
                str(images / "out"),
                "--devices",
                "cpu",
                "--backend",
                "torch",
                "--quiet",
                "--no-gallery",
            ]
        )
        == 0
    )
    assert len(list((images / "out" / "s").rglob("*.gif"))) == 2


@pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or os.environ.get("TRITON_INTERPRET") != "1",
    reason="needs triton and TRITON_INTERPRET=1 set before Python starts",
)
def test_triton_in_the_interpreter_renders_a_world_preset_byte_for_byte(images):
    preset = build_preset(world_data(), str(images / "p.yaml"))
    outputs = {
        backend: runner.render(
            preset, backend=backend, device="cpu", out_dir=images / backend, quiet=True
        ).outputs
        for backend in ("torch", "triton")
    }
    for fmt in ("gif", "png"):
        assert outputs["torch"][fmt].read_bytes() == outputs["triton"][fmt].read_bytes(), fmt


def test_one_species_with_a_palette_shows_the_plain_render(tmp_path):
    plain = build_preset(tiny_data(palette={"names": ["magma"]}), "p.yaml")
    one = build_preset(tiny_data(palette={"names": ["magma"]}, species=[{"palette": "magma"}]), "p.yaml")
    assert runner.batch_key(one) == runner.batch_key(plain)
    outputs = [render(preset, tmp_path / str(i)).outputs for i, preset in enumerate((plain, one))]
    for fmt in ("gif", "png"):
        with Image.open(outputs[0][fmt]) as a, Image.open(outputs[1][fmt]) as b:
            for frame in range(getattr(a, "n_frames", 1)):
                a.seek(frame)
                b.seek(frame)
                assert np.array_equal(np.asarray(a.convert("RGB")), np.asarray(b.convert("RGB"))), (
                    fmt,
                    frame,
                )


def test_outputs_embed_image_paths_relative_to_the_working_directory(images, tmp_path_factory, monkeypatch):
    """Two machines rendering from copies of one folder write the same bytes: image paths under
    the working directory are embedded relative to it, and `--from` reads them back from there."""
    import shutil

    here = tmp_path_factory.mktemp("machine-a")
    there = tmp_path_factory.mktemp("machine-b")
    for folder in (here, there):
        shutil.copytree(images, folder / "work", ignore=shutil.ignore_patterns("folder.png"))
        write_preset(folder / "work", world_data())
    outputs = []
    for folder in (here, there):
        monkeypatch.chdir(folder / "work")
        assert main(["render", "preset.yaml", "--out", "out", "--quiet", "--backend", "torch"]) == 0
        outputs.append(folder / "work" / "out" / "world")
    text = (outputs[0] / "world-s3.json").read_text()
    assert '"path": "wall.png"' in text and str(here) not in text
    for fmt in ("gif", "mp4", "png"):
        name = f"world-s3.{fmt}"
        assert (outputs[0] / name).read_bytes() == (outputs[1] / name).read_bytes(), fmt
    monkeypatch.chdir(there / "work")  # --from reads the relative paths from the working directory
    assert (
        main(
            [
                "render",
                "--from",
                str(outputs[0] / "world-s3.gif"),
                "--out",
                "again",
                "--quiet",
                "--backend",
                "torch",
            ]
        )
        == 0
    )
    assert (there / "work" / "again" / "world" / "world-s3.gif").read_bytes() == (
        outputs[0] / "world-s3.gif"
    ).read_bytes()


def test_agents_are_spawned_on_the_simulations_device_up_to_a_size(monkeypatch):
    """Groups spawn where they will run (the meta device stands in for a GPU here: no values,
    only where tensors live); groups larger than SPAWN_ON_DEVICE_MAX spawn on the host, which has
    the memory for the spawn's temporaries."""
    from physarum.render import world

    preset = build_preset(tiny_data(), "t.yaml")
    state, _, _ = spawn_groups([preset, preset.model_copy(update={"seed": 4})], "meta")
    assert {state.position.device.type, state.heading.device.type, state.trail.device.type} == {"meta"}
    assert tuple(state.position.shape) == (2, 2, preset.agents.count)
    monkeypatch.setattr(world, "SPAWN_ON_DEVICE_MAX", preset.agents.count - 1)
    state, _, _ = spawn_groups([preset], "meta")
    assert state.position.device.type == "cpu"
