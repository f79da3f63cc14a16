"""The live page's background render (render/live/background.py): its progress sink reads no
frame and needs none past a platform target's trim (reads_frames False), so a targeted MP4 alone
simulates only the frames it keeps, as the command's render does (formats/targets.py
trimmed_run), with the same MP4 bytes; the sink counts the frames shown, not a ping-pong's
replays, of the count the render shows."""

from __future__ import annotations

import pytest

from physarum.render.live.background import BackgroundRender, Progress
from physarum.render.preset import build_preset
from physarum.render.run import runner
from support import tiny_data


def targeted(loop_mode: str, steps: int = 200):
    """200 frames at 1 fps after a warmup of 5 steps, an MP4 alone for X: it keeps 140 s."""
    out = {"formats": ["mp4"], "fps": 1, "target": "x", "loop_mode": loop_mode}
    data = tiny_data(output=out, run={"steps": steps, "steps_per_frame": 1, "warmup": 5})
    return build_preset(data, "t.yaml")


def render_live(preset, out) -> tuple[BackgroundRender, dict]:
    """A background render of `preset` into `out`, waited for: the job and its outputs."""
    ended = []
    job = BackgroundRender(preset, out, "torch", "cpu", lambda *report: None, lambda *end: ended.append(end))
    job.thread.join()
    ((outputs, error),) = ended
    assert error is None
    return job, outputs


@pytest.mark.parametrize(
    ("loop_mode", "steps", "simulated", "shown"),
    [("none", 200, 145, 140), ("ping-pong", 200, 145, 140), ("ping-pong", 100, 105, 100)],
)
def test_a_targeted_live_render_simulates_the_kept_frames(
    tmp_path, steps_simulated, loop_mode, steps, simulated, shown
):
    """X keeps 140 of 200 frames (of 398 handed with ping-pong's replays): the live render
    simulates 5 + 140 steps and counts 140 frames of 140; 100 frames are kept whole."""
    preset = targeted(loop_mode, steps)
    job, outputs = render_live(preset, tmp_path / "live")
    assert sum(steps_simulated) == simulated
    assert (job.progress.done, job.progress.frames) == (shown, shown)
    command = runner.render(preset, backend="torch", device="cpu", out_dir=tmp_path / "command", quiet=True)
    assert outputs["mp4"].read_bytes() == command.outputs["mp4"].read_bytes()


def test_a_sink_that_reads_frames_keeps_every_frame_simulated(tmp_path, steps_simulated):
    """A caller's sink that may read the frames (no reads_frames = False) reads past the trim:
    every step simulated, the note says why."""

    class Reading(Progress):
        reads_frames = True

    preset = targeted("none")
    sink = Reading(preset.frames, lambda *report: None)
    result = runner.render(preset, backend="torch", device="cpu", out_dir=tmp_path, quiet=True, sinks=[sink])
    assert sum(steps_simulated) == 205 and sink.done == 200
    assert any("the caller's sinks read past them" in note for note in result.notes)
