"""render/out/specs.py: the floor a GIF budget may not go below, before a render."""

from __future__ import annotations

import re

import pytest
import yaml

from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from physarum.render.formats.gif_budget import reduced_bytes
from physarum.render.formats.gif_file import Digits, kept_frames
from physarum.render.look.colour import make_colourist
from physarum.render.out.specs import (
    FLOOR_BITS_PER_PIXEL,
    MIN_GIF_FRAMES,
    MIN_GIF_SIDE,
    check_gif_budget,
    floor_reduction,
)
from physarum.render.preset import load_preset
from physarum.render.preset.provenance import embedded_text


def test_the_floor_keeps_8_frames_and_64_pixels_or_all_there_are():
    floor = floor_reduction(512, 256, 80, Digits())
    assert 256 // floor.factor >= MIN_GIF_SIDE and 256 // (floor.factor + 1) < MIN_GIF_SIDE
    assert len(kept_frames(80, floor.stride)) >= MIN_GIF_FRAMES > len(kept_frames(80, floor.stride + 1))
    assert floor.levels == 16
    small = floor_reduction(48, 32, 5, Digits(6, 2))  # smaller than the floor: all of it, 256 levels
    assert (small.factor, small.stride, small.levels) == (1, 1, 256)


def test_reduced_bytes_grow_with_text_frames_and_size():
    palettes = [bytes(range(256)) * 3] * 20
    floor = floor_reduction(256, 256, 20, Digits())
    least = reduced_bytes(256, 256, palettes, 0, "x", floor)
    assert least < reduced_bytes(256, 256, palettes, 0, "x" * 100, floor)
    milder = floor_reduction(256, 256, 20, Digits()).__class__(16, 1, 1)
    assert least < reduced_bytes(256, 256, palettes, 0, "x", milder)


def _volume_preset(tmp_path):
    """A 3D preset of 20 frames of 96x80 (a local palette each), written to a file."""
    from support import TINY_3D, tiny_3d

    camera = {**TINY_3D["camera"], "width": 96, "height": 80, "samples": 16}
    data = tiny_3d(
        run={"steps": 60, "steps_per_frame": 3}, camera=camera, output={"formats": ["gif"], "fps": 10}
    )
    path = tmp_path / "tiny3d.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_3d_gif_budget_counts_a_local_table_per_frame(tmp_path):
    """Each volume frame has its own palette: the floor counts a 16-level table (48 bytes) for
    each of its 10 frames; with one palette for all the floor was 480 bytes lower."""
    path = _volume_preset(tmp_path)
    preset = load_preset(path)
    floor = floor_reduction(96, 80, 20, Digits())
    palettes = [make_colourist(preset).table(0).tobytes()] * 20
    text = embedded_text(preset)
    shared = reduced_bytes(96, 80, palettes, 0, text, floor)
    local = reduced_bytes(96, 80, palettes, 0, text, floor, local=True)
    assert local - shared == len(kept_frames(20, floor.stride)) * 48 == 10 * 48
    with pytest.raises(RenderError, match=r"allow at least (\d+) bytes") as refused:
        check_gif_budget(
            preset.model_copy(update={"output": preset.output.model_copy(update={"gif_max_bytes": 1024})})
        )
    pixels = len(kept_frames(20, floor.stride)) * int(96 * 80 * FLOOR_BITS_PER_PIXEL / 8)
    assert int(re.search(r"allow at least (\d+)", str(refused.value))[1]) == -(-(local + pixels) // 100) * 100


def test_a_3d_gif_lands_within_its_budget_or_is_refused_before_rendering(tmp_path, capsys):
    path = _volume_preset(tmp_path)
    argv = ["render", str(path), "--backend", "torch", "--quiet", "--gif-max-bytes"]
    assert main([*argv, "1024", "--out", str(tmp_path / "small")]) == 2
    err = capsys.readouterr().err
    least = int(re.search(r"allow at least (\d+) bytes", err)[1])
    assert err.count("error:") == 1 and not (tmp_path / "small").exists()
    assert main([*argv, str(least - 1), "--out", str(tmp_path / "below")]) == 2
    assert f"allow at least {least} bytes" in capsys.readouterr().err
    for budget in (least, least + 2000, 4 * least):
        out = tmp_path / f"b{budget}"
        assert main([*argv, str(budget), "--out", str(out)]) == 0, capsys.readouterr().err
        gif = out / "tiny3d" / "tiny3d-s2.gif"
        assert 0 < gif.stat().st_size <= budget


# output.loop_bars and output.bpm (issue 37 item 5)


def test_bar_frames_rounds_to_the_nearest_whole_frame():
    from physarum.render.preset.output_sections import bar_frames

    assert bar_frames(4, 120, 30) == (240, 240)  # 16 beats of 0.5 s
    frames, exact = bar_frames(1, 128, 30)  # 4 beats at 128 BPM: 56.25 frames
    assert (frames, float(exact)) == (56, 56.25)
    assert bar_frames(1, 96, 25)[0] == 63  # 62.5: halves up


def test_loop_bars_refused_unless_the_render_shows_its_frames():
    from physarum.render.base.errors import RenderError
    from physarum.render.out.specs import check_outputs
    from physarum.render.preset import build_preset
    from support import problems_of, tiny_data

    # tiny: 24 steps, 3 a frame = 8 frames; 1 bar at 150 BPM and 5 fps = 8 frames exactly
    fits = tiny_data(output={"formats": ["png"], "fps": 5, "loop_bars": 1, "bpm": 150})
    assert check_outputs(build_preset(fits, "t.yaml")) == [
        "loop: 1 bars at 150 BPM and 5 fps = 8 frames exactly"
    ]
    rounded = tiny_data(output={"formats": ["png"], "fps": 5, "loop_bars": 1, "bpm": 155})  # 7.742
    assert "rounded to 8" in check_outputs(build_preset(rounded, "t.yaml"))[0]
    longer = tiny_data(output={"formats": ["png"], "fps": 10, "loop_bars": 1, "bpm": 150})  # 16 frames
    with pytest.raises(RenderError, match=r"16 frames .* shows 8; run.steps: 48 shows them"):
        check_outputs(build_preset(longer, "t.yaml"))
    assert any("needs a tempo" in p for p in problems_of(tiny_data(output={"loop_bars": 2})))
    assert any("leave bpm out" in p for p in problems_of(tiny_data(output={"bpm": 120})))
    pong = tiny_data(
        output={"formats": ["png"], "fps": 7, "loop_bars": 1, "bpm": 150, "loop_mode": "ping-pong"}
    )
    with pytest.raises(RenderError, match="even count"):  # 11.2 -> 11 frames; ping-pong shows 14
        check_outputs(build_preset(pong, "t.yaml"))
