"""Preset loading: layering, every problem reported at once, safe YAML, the curated presets."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from physarum.render.preset import PresetError, load_preset
from support import CURATED, ROOT, TWO_SPECIES, fifo, problems_of, tiny_data


def test_precedence_file_then_set_then_flags(write_yaml):
    path = write_yaml(yaml.safe_dump(tiny_data(seed=5)))
    preset = load_preset(path, ["seed=6", "model.decay=0.25"], {"seed": 7})
    assert (preset.seed, preset.model.decay) == (7, 0.25)
    assert load_preset(path, ["seed=6"]).seed == 6
    assert load_preset(path).seed == 5


def test_unknown_keys_suggest_the_near_one():
    problems = problems_of(tiny_data(modle={"decay": 0.1}, canvas={"widht": 64}))
    assert any("modle: unknown key; did you mean 'model'?" in p for p in problems)
    assert any("canvas.widht: unknown key; did you mean 'width'?" in p for p in problems)


def test_all_problems_are_reported_at_once_with_file_path_and_value():
    problems = problems_of(
        tiny_data(model={"sensor_angle": 500, "deposit": "lots"}, agents={"spawn": "circle"})
    )
    assert len(problems) == 3
    joined = "\n".join(problems)
    assert "p.yaml: model.sensor_angle:" in joined and "(got 500)" in joined
    assert "model.deposit: Input should be a valid number (got 'lots')" in joined
    assert "'random', 'disk', 'ring', 'center', 'image', 'ball' or 'sphere'" in joined


def test_every_problem_at_once_images_among_them(images):
    found = problems_of(
        tiny_data(
            world={"trail_image": {"path": "nope.png"}, "walls": {"path": "notes.txt"}},
            species=TWO_SPECIES,
            interaction=[[1.0]],
            model={"decay": 2},
        ),
        source=str(images / "p.yaml"),
    )
    joined = "\n".join(found)
    assert len(found) == 3, joined  # schema errors: the two images and the decay
    assert "nope.png" in joined and "notes.txt" in joined and "model.decay" in joined
    found = problems_of(
        tiny_data(species=TWO_SPECIES, interaction=[[1.0]], agents={"spawn": "image", "image": "black.png"}),
        source=str(images / "p.yaml"),
    )
    assert len(found) == 2 and "interaction" in found[0] and "black everywhere" in found[1]


def test_sensor_distance_must_fit_the_canvas():
    problems = problems_of(tiny_data(model={"sensor_distance": 20}))
    assert problems == [
        "p.yaml: model.sensor_distance: must be less than half the canvas's short side (16 pixels) (got 20.0)"
    ]


def test_malformed_yaml_names_the_line(write_yaml):
    path = write_yaml("name: x\nmodel: {decay: 0.1\n")
    with pytest.raises(PresetError, match=r"preset.yaml: malformed YAML at line 3"):
        load_preset(path)


def test_yaml_tags_that_construct_objects_are_refused(write_yaml, tmp_path):
    marker = tmp_path / "pwned"
    path = write_yaml(f'name: !!python/object/apply:os.system ["touch {marker}"]\n')
    with pytest.raises(PresetError, match="YAML tag not allowed at line 1"):
        load_preset(path)
    assert not marker.exists()


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(PresetError, match="no such preset file"):
        load_preset(tmp_path / "absent.yaml")
    with pytest.raises(PresetError, match="is a folder"):
        load_preset(tmp_path)


def test_set_needs_key_and_value():
    problems = problems_of(tiny_data(), ["nonsense", "model.decay=oops"])
    assert "--set 'nonsense': expected key.path=value" in problems[0]
    assert "model.decay: Input should be a valid number (got 'oops')" in problems[1]


def test_there_are_enough_curated_presets():
    assert len(CURATED) >= 9 and (ROOT / "presets" / "quickstart.yaml") in CURATED


@pytest.mark.parametrize("path", CURATED, ids=[p.stem for p in CURATED])
def test_curated_presets_validate(path: Path):
    preset = load_preset(path)
    assert preset.name == path.stem
    assert preset.description and len(preset.description.splitlines()) == 1


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    with pytest.raises(PresetError) as caught:
        load_preset(fifo(tmp_path / "preset.yaml"))
    assert caught.value.problems == [
        f"{tmp_path / 'preset.yaml'}: is a FIFO (named pipe), not a regular file"
    ]


def test_a_huge_preset_file_is_refused_on_its_size(write_yaml):
    path = write_yaml("# padding\n" * 5_000_000)  # 50 MB
    start = time.perf_counter()
    with pytest.raises(PresetError, match=r"preset.yaml: is 50000000 bytes; at most 1048576 bytes are read"):
        load_preset(path)
    assert time.perf_counter() - start < 1


def test_duplicate_keys_and_nested_aliases_in_a_preset_file(write_yaml):
    path = write_yaml(yaml.safe_dump(tiny_data()) + "seed: 9\n")
    with pytest.raises(PresetError, match=r"key 'seed' given twice \(lines \d+ and \d+\)"):
        load_preset(path)
    bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
    )
    with pytest.raises(PresetError, match="more than 100000 values"):
        load_preset(write_yaml(bomb))


def test_exponent_floats_are_read_as_numbers_in_files_and_set(write_yaml):
    path = write_yaml(yaml.safe_dump(tiny_data()).replace("decay: 0.1", "decay: 5e-2"))
    preset = load_preset(path, ["model.deposit=1e3", "model.turn_angle=2E1"])
    assert (preset.model.decay, preset.model.deposit, preset.model.turn_angle) == (0.05, 1000.0, 20.0)


def test_deep_nesting_in_a_preset_is_one_message(write_yaml):
    with pytest.raises(PresetError, match="nested more than 64 levels deep"):
        load_preset(write_yaml("name: x\nmodel: " + "[" * 500 + "]" * 500 + "\n"))
    with pytest.raises(PresetError, match="nested more than 64 levels deep"):
        load_preset(write_yaml(yaml.safe_dump(tiny_data())), ["model.decay=" + "[" * 500 + "]" * 500])


def test_a_depth_makes_a_3d_preset_and_2d_dumps_stay_as_they_were():
    from physarum.render.preset import build_preset

    volume = build_preset(
        tiny_data(canvas={"width": 40, "height": 32, "depth": 24}, agents={"spawn": "ball"}), "v.yaml"
    )
    assert (volume.dims, volume.short_side) == (3, 24) and volume.canvas.depth == 24
    flat = build_preset(tiny_data(), "f.yaml")
    assert flat.dims == 2 and "depth" not in flat.model_dump(mode="json")["canvas"]
    dense = build_preset(
        tiny_data(canvas={"width": 40, "height": 32, "depth": 24}, agents={"density": 0.5, "count": None}),
        "d.yaml",
    )
    assert dense.agents.count == 40 * 32 * 24 // 2  # agents per voxel


def test_3d_presets_refuse_what_the_volume_model_lacks():
    volume = {"width": 32, "height": 32, "depth": 16}
    problems = problems_of(
        tiny_data(
            canvas=volume,
            agents={"spawn": "disk"},
            palette={"layer": "density"},
            world={"boundary": "reflect", "food": {"points": [{"x": 0.5, "y": 0.5}]}},
        )
    )
    joined = "\n".join(problems)
    assert "world: a 3D preset (canvas.depth set) has no trail image, walls or food" in joined
    assert "palette.layer: a 3D preset shows its trail volume only" in joined
    assert "agents.spawn: a 3D preset spawns random, center, ball, sphere (got 'disk')" in joined
    assert any(
        "must be less than half the canvas's short side (8 pixels)" in p
        for p in problems_of(tiny_data(canvas=volume, model={"sensor_distance": 9}))
    )
    assert any("sides of at most 1024" in p for p in problems_of(tiny_data(canvas={**volume, "width": 2048})))
    assert any("ball is a 3D spawn" in p for p in problems_of(tiny_data(agents={"spawn": "ball"})))
