"""The resolved curves as values and as a plot (render/preset/audio.py frame_values and
plot_curves; physarum.curves; physarum validate --plot): a value a frame, the frame's own
(checked against the periodic shape's rule and against the schedule the render steps with); a
PNG, the same bytes twice; what is refused, one message, exit 2, nothing written."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction

import pytest
from PIL import Image
from test_audio_render import audio_data, beat_track, render, write_wav

import physarum
from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from physarum.render.preset import audio as soundtrack
from physarum.render.preset import build_preset
from support import tiny_data, write_preset


def square_preset(**run):
    model = {**tiny_data()["model"], "deposit": {"wave": "square", "period": "10 steps", "range": [2, 8]}}
    return build_preset(tiny_data(model=model, run={"steps": 24, "steps_per_frame": 3, **run}), "sq.yaml")


@pytest.mark.parametrize("warmup", [0, 4])
def test_a_frames_value_is_the_shape_at_the_frames_step(warmup):
    preset = square_preset(warmup=warmup)
    values = soundtrack.frame_values(preset)["model.deposit"]
    assert len(values) == preset.frames == 8
    for f, value in enumerate(values):
        turn = Fraction(warmup + (f + 1) * 3, 10) % 1  # a period in steps: the frame's own step
        assert value == (8 if turn < Fraction(1, 2) else 2), f
    # the values the render steps with: frame f's from the step after frame f - 1's
    schedule = dict(preset.schedules)["model.deposit"]
    assert [schedule.at(warmup + f * 3 + 1) for f in range(1, 8)] == values[1:]


def test_curves_in_the_api_and_its_plot(tmp_path):
    sound = write_wav(tmp_path / "beat.wav", beat_track(1.0))
    preset = build_preset(audio_data(sound), "a.yaml")
    curves = physarum.curves(preset)
    assert sorted(curves) == ["look.exposure", "model.decay", "model.deposit"]
    assert all(len(v) == preset.frames for v in curves.values())
    assert set(curves["model.deposit"]) <= set(
        float(v) for _, v in dict(preset.schedules)["model.deposit"].resolved(0)
    )
    assert max(curves["model.deposit"]) > min(curves["model.deposit"])  # the beat moved it
    physarum.curves(preset, plot=tmp_path / "a.png")
    physarum.curves(preset, plot=str(tmp_path / "b.png"))
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    three = Image.open(tmp_path / "a.png")
    physarum.curves(square_preset(), plot=tmp_path / "one.png")
    one = Image.open(tmp_path / "one.png")
    assert three.width == one.width and three.height > one.height  # a panel a key
    assert physarum.curves(build_preset(tiny_data(), "t.yaml")) == {}
    with pytest.raises(RenderError, match="no followed or periodic keys"):
        physarum.curves(build_preset(tiny_data(), "t.yaml"), plot=tmp_path / "none.png")
    with pytest.raises(RenderError, match="ending in .png"):
        physarum.curves(preset, plot=tmp_path / "a.jpg")
    with pytest.raises(TypeError, match="physarum.curves: plot must be a name or a path"):
        physarum.curves(preset, plot=3)
    assert not (tmp_path / "none.png").exists() and not (tmp_path / "a.jpg").exists()


def test_validate_plot(tmp_path, capsys):
    sound = write_wav(tmp_path / "beat.wav", beat_track(1.0))
    preset_file = write_preset(tmp_path, audio_data(sound), "a.yaml")
    assert main(["validate", str(preset_file), "--plot", str(tmp_path / "c.png")]) == 0
    (tmp_path / "dir.png").mkdir()
    assert Image.open(tmp_path / "c.png").format == "PNG"
    refusals = [
        (
            [str(preset_file), str(preset_file)],
            tmp_path / "d.png",
            "plots one preset's curves; 2 presets given",
        ),
        ([str(preset_file)], tmp_path / "no" / "d.png", "no folder"),
        ([str(preset_file)], tmp_path / "dir.png", "is a folder"),
        (["quickstart"], tmp_path / "d.png", "quickstart has no followed or periodic keys"),
    ]
    for presets, plot, message in refusals:
        capsys.readouterr()
        assert main(["validate", *presets, "--plot", str(plot)]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "beat.wav", "c.png", "dir.png"]


def test_the_sidecar_records_what_a_key_follows_and_its_curves_digest(tmp_path):
    sound = write_wav(tmp_path / "beat.wav", beat_track(1.0))
    data = audio_data(sound, output={"formats": ["png"], "fps": 20})
    preset_file = write_preset(tmp_path, data, "a.yaml")
    assert render(preset_file, tmp_path / "out") == 0
    record = json.loads(next((tmp_path / "out").rglob("*.json")).read_text())
    entry = record["schedules"]["model.decay"]
    assert "keyframes" not in entry
    assert entry["follows"] == {"audio": "bass", "range": [0.05, 0.2], "attack": 10, "release": "250ms"}
    # the digest is that of the hold keyframes the frames' values make (a line per change)
    preset = build_preset(data, "a.yaml")
    values = physarum.curves(preset)["model.decay"]
    starts = [0] + [f * 2 + 1 for f in range(1, len(values))]  # frame f's first step (no warmup)
    changes = [(step, v) for i, (step, v) in enumerate(zip(starts, values)) if i == 0 or values[i - 1] != v]
    text = "".join(f"{step} {v!r}\n" for step, v in changes)
    assert entry["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert entry["keyframes_count"] == len(changes) > 1 and entry["steps"] == [0, changes[-1][0]]
    # what --from reads is unchanged: the embedded preset text with the key as written
    assert "audio: bass" in record["preset_yaml"]
