"""scripts/loop_seams.py: the arithmetic of a loop's seam and frame changes, and its GIF reading."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "loop_seams.py"


def load_script():
    """The script as a module (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location("loop_seams", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


seams = load_script()


def flat(value: int, shape=(4, 6, 3)) -> np.ndarray:
    """A frame of one grey level."""
    return np.full(shape, value, dtype=np.uint8)


def test_frame_change_is_the_mean_absolute_difference_without_wrapping():
    a = flat(10)
    b = flat(10)
    b[0, 0, 0] = 250  # one of 72 values 240 higher: no uint8 wrap-around
    assert seams.frame_change(a, b) == pytest.approx(240 / 72)
    assert seams.frame_change(b, a) == pytest.approx(240 / 72)
    assert seams.frame_change(flat(0), flat(255)) == 255.0


def test_frame_change_refuses_frames_of_different_shapes():
    with pytest.raises(ValueError, match="different shapes"):
        seams.frame_change(flat(0), flat(0, shape=(4, 5, 3)))


def test_a_ramp_jumps_back_at_its_seam():
    frames = [flat(v) for v in (0, 10, 20, 30, 40)]
    report = seams.seam_report(frames)
    assert seams.consecutive_changes(frames) == [10.0, 10.0, 10.0, 10.0]
    assert report["seam"] == 40.0
    assert report["median"] == 10.0
    assert report["max"] == 10.0
    assert report["ratio"] == 4.0
    assert report["jumps"] is True
    assert report["frames"] == 5


def test_a_ping_pong_loop_has_no_jump():
    shown = [0, 10, 20, 30, 20, 10]  # frames 0..3, then 2..1: frame 0 follows frame 1
    report = seams.seam_report([flat(v) for v in shown])
    assert report["seam"] == 10.0
    assert report["ratio"] == 1.0
    assert report["jumps"] is False


def test_median_not_mean_and_max_of_uneven_changes():
    report = seams.seam_report([flat(v) for v in (0, 1, 3, 103, 2)])
    # changes 1, 2, 100, 101: median 51 (the mean of the middle two), max 101, seam 2
    assert report["median"] == 51.0
    assert report["max"] == 101.0
    assert report["seam"] == 2.0
    assert report["jumps"] is False


def test_a_still_loop_and_a_jump_after_stillness():
    still = seams.seam_report([flat(7)] * 3)
    assert (still["seam"], still["median"], still["ratio"], still["jumps"]) == (0.0, 0.0, 0.0, False)
    jump = seams.seam_report([flat(7), flat(7), flat(7), flat(9)])
    assert jump["ratio"] == float("inf") and jump["jumps"] is True


def test_one_frame_is_no_loop():
    with pytest.raises(ValueError, match="at least 2 frames"):
        seams.seam_report([flat(0)])


def test_read_frames_decodes_every_frame_of_a_gif(tmp_path):
    levels = (0, 60, 120, 250)
    images = [Image.new("RGB", (8, 4), (v, v, v)) for v in levels]
    path = tmp_path / "ramp.gif"
    images[0].save(path, save_all=True, append_images=images[1:], duration=40, loop=0)
    frames = seams.read_frames(path)
    assert [f.shape for f in frames] == [(4, 8, 3)] * 4
    assert [int(f[0, 0, 0]) for f in frames] == list(levels)
    assert seams.loop_mode(path) == "?"
    assert seams.main([str(path)]) == 1  # the seam 250 > the median 60


def test_the_command_line_refuses_an_unknown_target(capsys):
    with pytest.raises(SystemExit) as stop:
        seams.main(["no-such-preset"])
    assert stop.value.code == 2
    assert "neither a GIF file nor a curated preset" in capsys.readouterr().err


def test_a_gif_that_cannot_be_read_is_reported_and_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.gif"
    bad.write_bytes(b"GIF89a not really")
    assert seams.main([str(bad)]) == 2
    captured = capsys.readouterr()
    assert "bad.gif" in captured.out and "failed:" in captured.out
    assert "not measured: bad.gif" in captured.err
