"""Whole renders: determinism, the --from round trip, safe writes under failure and kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from PIL import Image

from physarum.kernels import get_backend
from physarum.render import runner
from physarum.render.cli import main
from physarum.render.encode import Mp4Writer
from physarum.render.errors import RenderError
from physarum.render.frames import FramePipeline
from physarum.render.preset import build_preset
from support import ROOT, tiny_data


def render_tiny(out, **sections):
    preset = build_preset(tiny_data(**sections), "tiny.yaml")
    return runner.render(preset, backend="torch", device="cpu", out_dir=out, quiet=True)


def test_render_writes_every_format_and_a_sidecar(tmp_path):
    result = render_tiny(tmp_path)
    assert sorted(result.outputs) == ["gif", "json", "mp4", "png"]
    sidecar = json.loads(result.outputs["json"].read_text())
    assert sidecar["seed"] == 3 and sidecar["backend"] == "torch" and sidecar["frames"] == 8
    assert sidecar["outputs"]["gif"]["bytes"] == result.outputs["gif"].stat().st_size
    assert result.outputs["gif"] == tmp_path / "tiny" / "tiny-s3.gif"
    assert not list(tmp_path.rglob(".*.part"))


def test_same_preset_and_seed_give_identical_bytes(tmp_path):
    first = render_tiny(tmp_path / "a").outputs
    second = render_tiny(tmp_path / "b").outputs
    for fmt in ("gif", "mp4", "png"):
        assert first[fmt].read_bytes() == second[fmt].read_bytes(), fmt
    other_seed = render_tiny(tmp_path / "c", seed=4).outputs
    assert other_seed["png"].read_bytes() != first["png"].read_bytes()


@pytest.mark.parametrize("fmt", ["gif", "mp4", "png", "json"])
def test_render_from_an_output_reproduces_it(tmp_path, fmt):
    original = render_tiny(tmp_path / "a").outputs
    code = main(
        [
            "render",
            "--from",
            str(original[fmt]),
            "--out",
            str(tmp_path / "b"),
            "--quiet",
            "--backend",
            "torch",
        ]
    )
    assert code == 0
    again = tmp_path / "b" / "tiny"
    for kind in ("gif", "mp4", "png"):
        assert (again / original[kind].name).read_bytes() == original[kind].read_bytes()


def test_from_a_file_without_a_preset_is_a_clear_error(tmp_path, capsys):
    stray = tmp_path / "stray.png"
    from PIL import Image

    Image.new("RGB", (4, 4)).save(stray)
    assert main(["render", "--from", str(stray), "--out", str(tmp_path / "o")]) == 2
    assert "carries no physarum preset" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_encoder_failure_stops_the_render_and_removes_partial_files(tmp_path, monkeypatch):
    def broken(self, frame):
        raise OSError("disk full")

    monkeypatch.setattr(Mp4Writer, "write", broken)
    with pytest.raises(RenderError, match="tiny-s3.mp4: encoder failed: disk full"):
        render_tiny(tmp_path, run={"steps": 60, "steps_per_frame": 1})
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_interruption_leaves_no_output(tmp_path, monkeypatch, capsys):
    calls = {"n": 0}
    advance = get_backend("torch").advance

    def interrupted(self, steps):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        advance(self, steps)

    monkeypatch.setattr(get_backend("torch"), "advance", interrupted)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_data()))
    assert main(["render", str(path), "--out", str(tmp_path / "o"), "--quiet", "--backend", "torch"]) == 130
    assert [p for p in (tmp_path / "o").rglob("*") if p.is_file()] == []


def test_killed_render_leaves_no_truncated_file(tmp_path):
    preset = tmp_path / "slow.yaml"
    preset.write_text(
        yaml.safe_dump(
            tiny_data(
                name="slow",
                canvas={"width": 256, "height": 256},
                agents={"count": 50000},
                run={"steps": 4000, "steps_per_frame": 2},
            )
        )
    )
    out = tmp_path / "o"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "physarum.render.cli",
            "render",
            str(preset),
            "--out",
            str(out),
            "--quiet",
            "--backend",
            "torch",
        ],
        cwd=ROOT,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not list(out.rglob(".*.part")):
        time.sleep(0.05)
    time.sleep(0.5)
    assert list(out.rglob(".*.part")), "the render never started writing"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    finals = [p for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert finals == []


def test_gif_preview_scale_and_frames_dir(tmp_path):
    from PIL import Image

    preset = build_preset(
        tiny_data(canvas={"width": 64, "height": 40}, output={"gif_scale": 0.5}), "tiny.yaml"
    )
    frames = tmp_path / "frames"
    result = runner.render(
        preset, backend="torch", device="cpu", out_dir=tmp_path / "o", quiet=True, frames_dir=frames
    )
    with Image.open(result.outputs["gif"]) as gif:
        assert gif.size == (32, 20) and gif.n_frames == 8
    sequence = sorted(frames.iterdir())
    assert [p.name for p in sequence] == [f"tiny-s3-{i:05d}.png" for i in range(1, 9)]
    with Image.open(sequence[-1]) as last, Image.open(result.outputs["png"]) as still:
        assert last.size == (64, 40)
        assert last.tobytes() == still.tobytes()


def test_cli_rejects_a_bad_scale(tmp_path, capsys):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_data()))
    assert main(["render", str(path), "--scale", "0", "--out", str(tmp_path / "o")]) == 2
    assert "output.gif_scale: Input should be greater than 0 (got 0.0)" in capsys.readouterr().err


def test_slow_encoders_get_the_frames_they_were_given(tmp_path, monkeypatch):
    # Frame buffers are reused from a ring; an encoder that falls behind must still read each
    # frame before its slot is refilled. A delay before encoding makes the producer lap it.
    import time

    from physarum.render.encode import GifWriter

    quick = render_tiny(tmp_path / "quick", run={"steps": 40, "steps_per_frame": 1}).outputs
    write = GifWriter.write

    def slow(self, frame):
        time.sleep(0.02)
        return write(self, frame)

    monkeypatch.setattr(GifWriter, "write", slow)
    slow_outputs = render_tiny(tmp_path / "slow", run={"steps": 40, "steps_per_frame": 1}).outputs
    assert slow_outputs["gif"].read_bytes() == quick["gif"].read_bytes()


def test_png_still_carries_its_print_resolution(tmp_path):
    from PIL import Image

    from physarum.render.preset import PresetError

    plain = render_tiny(tmp_path / "plain")
    printed = render_tiny(tmp_path / "print", output={"formats": ["png"], "png_dpi": 300})
    with Image.open(printed.outputs["png"]) as image:
        assert image.info["dpi"] == pytest.approx((300, 300), abs=0.01)  # pHYs holds dots per metre
        pixels = image.convert("RGB").tobytes()
    with Image.open(plain.outputs["png"]) as image:
        assert "dpi" not in image.info  # unset: no pHYs chunk, the bytes as before
        assert image.convert("RGB").tobytes() == pixels  # the same picture either way
    assert "png_dpi" not in plain.outputs["json"].read_text()
    with pytest.raises(PresetError, match="output.png_dpi"):
        build_preset(tiny_data(output={"png_dpi": 0}), "tiny.yaml")


def test_a_png_still_alone_gets_only_the_last_frames_rgb(tmp_path, monkeypatch):
    """Without an MP4 (or a frames folder) no frame but the last is turned into RGB and copied
    to the host: the PNG still is the last frame, the GIF reads index frames."""
    seen = []
    submit = FramePipeline.submit

    def record(self, number, trail):
        submit(self, number, trail)
        seen.append((number, self.pending[-1][0].rgb is not None))

    monkeypatch.setattr(FramePipeline, "submit", record)
    result = render_tiny(tmp_path / "gp", output={"formats": ["gif", "png"]})
    assert [number for number, rgb in seen if rgb] == [len(seen) - 1] and len(seen) == 8
    seen.clear()
    render_tiny(tmp_path / "all")
    assert all(rgb for _, rgb in seen)
    full = tmp_path / "all" / "tiny" / "tiny-s3.png"
    with Image.open(result.outputs["png"]) as still, Image.open(full) as every:
        assert np.array_equal(np.asarray(still), np.asarray(every))  # the embedded presets differ
