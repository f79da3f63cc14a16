"""What a 3D render and the 2D-only commands refuse (render/run/volume_checks.py): each refusal
is one message naming the feature, exit 2, nothing written; --preview reduces a volume."""

from __future__ import annotations

import json

import pytest
import yaml

from physarum.render.cli.main import main
from physarum.render.preset import build_preset
from physarum.render.preset.reduce import reduce_preset
from physarum.render.run.volume_checks import render_problem
from support import TINY_3D, tiny_3d, tiny_data


def _write(tmp_path, data: dict, name: str = "p.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


REFUSED = [
    ({"output": {"formats": ["png"], "fields": {"at": [3]}}}, [], "output.fields: raw fields are 2D"),
    (
        {
            "output": {"formats": ["gif"], "loop_mode": "closest", "loop_frames": 2},
            "run": {"steps": 30, "steps_per_frame": 3},
        },
        [],
        "closest compares 2D frames",
    ),
    ({}, ["--stats"], "--stats measures 2D trail maps"),
]


@pytest.mark.parametrize("changes, flags, message", REFUSED, ids=["fields", "closest", "stats"])
def test_a_3d_render_refuses_with_one_message(tmp_path, capsys, changes, flags, message):
    path = _write(tmp_path, tiny_3d(**changes))
    out = tmp_path / "out"
    assert main(["render", str(path), "--out", str(out), "--quiet", "--backend", "torch", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("error:") == 1 and "Traceback" not in err
    assert not any(p.is_file() for p in out.rglob("*")) if out.exists() else True


def test_a_look_is_allowed_for_a_3d_preset():
    """(render/look/volume_look.py; tests/test_look_volume_look.py renders one)"""
    assert render_problem(build_preset(tiny_3d(look={"curve": "aces", "bloom": 1.0}), "tiny3d.yaml")) is None


def test_checkpoints_and_resume_are_allowed_for_a_3d_preset():
    """(test_sim_checkpoint.py kills a 3D render and resumes it to the uninterrupted bytes)"""
    preset = build_preset(tiny_3d(checkpoint={"at": [3]}), "tiny3d.yaml")
    assert render_problem(preset, resume=True) is None and render_problem(preset) is None


def test_a_2d_preset_refuses_a_camera_and_volume_steps():
    camera = build_preset(tiny_data(camera={"orbit": {}}), "tiny.yaml")
    assert "camera: only a 3D preset" in render_problem(camera)
    steps = build_preset(tiny_data(output={"volume": {"at": [3]}}), "tiny.yaml")
    assert "space-time stack, written once" in render_problem(steps)
    assert render_problem(build_preset(tiny_data(output={"volume": {}}), "tiny.yaml")) is None


@pytest.mark.parametrize("command", ["sensitivity", "graph", "explore"])
def test_2d_commands_refuse_a_3d_preset(tmp_path, capsys, command):
    path = _write(tmp_path, tiny_3d())
    assert main([command, str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"physarum {command}" in err and "3D preset" in err and err.count("error:") == 1
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.*"))


def test_sweep_refuses_a_3d_base(tmp_path, capsys):
    base = {k: v for k, v in TINY_3D.items() if k != "name"}
    sweep = {"name": "s3", "base": base, "grid": {"model.decay": [0.1, 0.2]}}
    path = _write(tmp_path, sweep, "s3.yaml")
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert "physarum sweep batches 2D presets" in capsys.readouterr().err


def test_preview_reduces_a_volume_and_its_camera():
    data = tiny_3d(canvas={"width": 64, "height": 48, "depth": 40}, agents={"count": 8000, "spawn": "random"})
    data["camera"] = {**data["camera"], "width": 200, "height": 100, "samples": 64}
    preset = build_preset(data, "p.yaml")
    reduced, note = reduce_preset(preset, preset_ratio := __import__("fractions").Fraction(1, 2))
    assert preset_ratio == 0.5 and note
    assert (reduced.canvas.width, reduced.canvas.height, reduced.canvas.depth) == (32, 24, 20)
    assert reduced.agents.count == 1000  # per voxel: 8000 / 8
    # a preview's frame: the full frame brought to PREVIEW_FRAME_3D (160) on its long side
    assert (reduced.camera.width, reduced.camera.height, reduced.camera.samples) == (160, 80, 32)
    halved, _ = reduce_preset(preset, preset_ratio, kind="reduce")  # --reduce 2: halved with the volume
    assert (halved.camera.width, halved.camera.height, halved.camera.samples) == (100, 50, 32)
    assert json.loads(json.dumps(reduced.model_dump()))["canvas"]["depth"] == 20


def test_render_from_a_3d_output_renders_it_again(tmp_path, capsys):
    path = _write(tmp_path, tiny_3d(output={"formats": ["png"]}))
    assert main(["render", str(path), "--out", str(tmp_path / "a"), "--quiet", "--backend", "torch"]) == 0
    first = tmp_path / "a" / "tiny3d" / "tiny3d-s2.png"
    assert (
        main(["render", "--from", str(first), "--out", str(tmp_path / "b"), "--quiet", "--backend", "torch"])
        == 0
    )
    assert (tmp_path / "b" / "tiny3d" / "tiny3d-s2.png").read_bytes() == first.read_bytes()


def test_metrics_of_a_3d_render_are_written(tmp_path):
    path = _write(tmp_path, tiny_3d(output={"formats": ["png"]}))
    assert (
        main(
            ["render", str(path), "--out", str(tmp_path / "o"), "--quiet", "--backend", "torch", "--metrics"]
        )
        == 0
    )
    assert (tmp_path / "o" / "tiny3d" / "tiny3d-s2.metrics.csv").stat().st_size > 0
