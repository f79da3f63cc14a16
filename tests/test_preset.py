"""Preset loading: layering, and one clear error for every kind of bad input, writing nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from physarum.render import machine
from physarum.render.cli import main
from physarum.render.errors import RenderError
from physarum.render.machine import check_memory
from physarum.render.preset import PresetError, build_preset, load_preset
from physarum.render.runner import check_formats
from support import ROOT, TINY, tiny_data


def problems_of(data: dict, settings=()) -> list[str]:
    with pytest.raises(PresetError) as caught:
        build_preset(data, "p.yaml", list(settings))
    return caught.value.problems


def test_defaults_fill_missing_sections():
    preset = build_preset({"name": "bare"}, "bare.yaml")
    assert preset.model.sensor_angle == 22.5
    assert preset.output.formats == ["gif", "mp4", "png"]
    assert preset.frames == 100


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
    assert "'random', 'disk', 'ring', 'center' or 'image'" in joined


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinite_numbers_are_refused(value):
    problems = problems_of(tiny_data(model={"decay": value}))
    assert problems == [f"p.yaml: model.decay: must be a finite number (got {value!r})"]


@pytest.mark.parametrize(
    "section,key,value",
    [
        ("canvas", "width", 7),
        ("canvas", "height", 20000),
        ("agents", "count", 0),
        ("model", "decay", 1.0),
        ("model", "diffuse", -0.1),
        ("run", "steps", 0),
        ("output", "fps", 0),
        ("palette", "gamma", 0),
    ],
)
def test_out_of_range_values(section, key, value):
    problems = problems_of(tiny_data(**{section: {key: value}}))
    assert len(problems) == 1 and f"{section}.{key}:" in problems[0] and f"(got {value})" in problems[0]


def test_wrong_types_are_not_coerced():
    problems = problems_of(tiny_data(seed="7", canvas={"width": 64.5}, output={"formats": "gif"}))
    assert {p.split(":")[1].strip() for p in problems} == {"seed", "canvas.width", "output.formats"}


def test_sensor_distance_must_fit_the_canvas():
    problems = problems_of(tiny_data(model={"sensor_distance": 20}))
    assert problems == [
        "p.yaml: model.sensor_distance: must be less than half the canvas's short side (16 pixels) (got 20.0)"
    ]


@pytest.mark.parametrize("name", ["../escape", "a/b", "UPPER", "", ".hidden", "x" * 65])
def test_names_that_would_leave_the_output_folder(name):
    problems = problems_of(tiny_data(name=name))
    assert len(problems) == 1 and problems[0].startswith("p.yaml: name: names become file names")


def test_palette_names_and_hex_stops():
    assert build_preset(tiny_data(palette={"names": [["#000", "#ff8800", "fff"]]}), "p").palette.names
    problems = problems_of(tiny_data(palette={"names": ["magam", ["#zz0000", "#fff"]]}))
    assert "did you mean 'magma'?" in problems[0]


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


def test_memory_is_checked_before_allocating():
    huge = build_preset(tiny_data(canvas={"width": 16384, "height": 16384}, agents={"count": 1 << 28}), "p")
    with pytest.raises(RenderError, match=r"needs about \d+\.\d GiB on cpu .* GiB are free"):
        check_memory(huge, "torch", __import__("torch").device("cpu"))


def test_mp4_sizes():
    odd = build_preset(tiny_data(canvas={"width": 49, "height": 33}), "p")
    assert check_formats(odd) == ["mp4 padded from 49x33 to 50x34 (H.264 yuv420p needs even sides)"]
    wide = build_preset(tiny_data(canvas={"width": 9000, "height": 64}), "p")
    with pytest.raises(RenderError, match="at most 8192 pixels per side"):
        check_formats(wide)


BAD_FILES = {
    "unknown_key": "name: x\nmodle: {}\n",
    "wrong_type": "name: x\nseed: seven\n",
    "out_of_range": "name: x\nmodel: {sensor_angle: 181}\n",
    "nan": "name: x\nmodel: {decay: .nan}\n",
    "malformed": "name: x\n  bad: [\n",
    "tag": "name: !!python/name:os.system\n",
    "escape": "name: ../../x\n",
    "too_big": "name: huge\ncanvas: {width: 16384, height: 16384}\nagents: {count: 268435456}\n",
    "mp4_too_wide": "name: wide\ncanvas: {width: 9000, height: 16}\nagents: {count: 10}\nmodel: {sensor_distance: 3}\n",
    "not_a_mapping": "- just\n- a list\n",
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_cli_bad_input_exits_2_with_one_message_and_writes_nothing(case, write_yaml, tmp_path, capsys):
    path = write_yaml(BAD_FILES[case])
    out = tmp_path / "out"
    code = main(["render", str(path), "--out", str(out), "--quiet", "--backend", "torch"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.startswith("error: ") and "Traceback" not in captured.err
    assert not out.exists() or not any(out.rglob("*"))


def test_cli_missing_preset(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml: no such preset file" in capsys.readouterr().err


def test_cli_triton_without_gpu_is_a_clear_error(write_yaml, capsys, monkeypatch):
    # not by unsetting TRITON_INTERPRET: Triton reads it once, at import, for the whole process
    monkeypatch.setattr(machine, "interpreter_mode", lambda: False)
    path = write_yaml(yaml.safe_dump(TINY))
    code = main(["render", str(path), "--backend", "triton", "--device", "cpu"])
    assert code == 2 and "needs a CUDA GPU" in capsys.readouterr().err


CURATED = sorted((ROOT / "presets").glob("*.yaml"))


def test_there_are_enough_curated_presets():
    assert len(CURATED) >= 9 and (ROOT / "presets" / "quickstart.yaml") in CURATED


@pytest.mark.parametrize("path", CURATED, ids=[p.stem for p in CURATED])
def test_curated_presets_validate(path: Path):
    preset = load_preset(path)
    assert preset.name == path.stem
    assert preset.description and len(preset.description.splitlines()) == 1


@pytest.mark.parametrize("path", CURATED, ids=[p.stem for p in CURATED])
def test_curated_presets_render_a_few_steps(path: Path, tmp_path):
    from physarum.render.runner import render

    preset = load_preset(path, ["run.steps=2", "run.steps_per_frame=1", "run.warmup=0"])
    result = render(preset, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    for fmt in preset.output.formats:
        assert result.outputs[fmt].stat().st_size > 0
    assert json_frames(result.outputs["json"]) == 2


def json_frames(path: Path) -> int:
    import json

    return json.loads(path.read_text())["frames"]


def test_a_closed_pipe_is_not_a_traceback():
    import subprocess
    import sys

    command = f"{sys.executable} -m physarum.render.cli presets | head -1"
    done = subprocess.run(command, shell=True, capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.count("\n") == 1
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
