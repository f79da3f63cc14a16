"""The frame path: ring buffers, what the pipeline makes for the writers, the encoder workers."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from physarum.render.base.errors import RenderError
from physarum.render.formats.contract import Frame
from physarum.render.formats.frames_dir import FramesDirSpec, FramesDirWriter
from physarum.render.formats.gif import GifSpec, GifWriter
from physarum.render.formats.png import PngSpec, PngWriter
from physarum.render.look.palette import palette_table
from physarum.render.out.encoder_process import EncoderProcess
from physarum.render.out.frames import EncoderWorker, FramePipeline, open_workers
from physarum.render.preset import build_preset
from support import render_cpu, render_tiny


def test_slow_encoders_get_the_frames_they_were_given(tmp_path, monkeypatch):
    # Frame buffers are reused from a ring; an encoder that falls behind must still read each
    # frame before its slot is refilled. A delay before encoding makes the producer lap it.
    quick = render_tiny(tmp_path / "quick", run={"steps": 40, "steps_per_frame": 1}).outputs
    write = GifWriter.write

    def slow(self, frame):
        time.sleep(0.02)
        return write(self, frame)

    monkeypatch.setattr(GifWriter, "write", slow)
    slow_outputs = render_tiny(tmp_path / "slow", run={"steps": 40, "steps_per_frame": 1}).outputs
    assert slow_outputs["gif"].read_bytes() == quick["gif"].read_bytes()


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


def test_a_3d_gif_and_png_hand_over_no_rgb_frame_but_the_last(tmp_path, monkeypatch):
    """A 3D frame is RGB first (the ray marcher's image; its index frame is reduced from it):
    with only a GIF and a PNG, no frame but the last carries that RGB frame to the writers, so
    the device's image is never handed to a host writer (on CUDA it was, and the render failed)."""
    from support import tiny_3d

    delivered = []
    deliver = FramePipeline.deliver

    def record(self, frame):
        delivered.append((frame.number, frame.rgb is None or isinstance(frame.rgb, np.ndarray)))
        deliver(self, frame)
        delivered[-1] += (frame.rgb is not None,)

    monkeypatch.setattr(FramePipeline, "deliver", record)
    data = tiny_3d(run={"steps": 12, "steps_per_frame": 3}, output={"formats": ["gif", "png"]})
    result = render_cpu(build_preset(data, "tiny3d.yaml"), tmp_path)
    assert len(delivered) > 2 and all(host for _, host, _ in delivered)
    assert [number for number, _, rgb in delivered if rgb] == [delivered[-1][0]]
    assert result.outputs["png"].is_file() and result.outputs["gif"].is_file()


class Recorder:
    """A Writer that records the numbers of the frames it is given; fails at frame fail_at."""

    def __init__(self, path: str, fail_at: int | None = None):
        self.path, self.fail_at = Path(path), fail_at
        self.numbers: list[int] = []
        self.committed = self.aborted = False

    def write(self, frame: Frame) -> None:
        if frame.number == self.fail_at:
            raise OSError("disk full")
        self.numbers.append(frame.number)

    def commit(self) -> None:
        self.committed = True

    def abort(self) -> None:
        self.aborted = True


def test_a_worker_gives_its_writer_every_frame_in_order_and_reports_its_failure():
    worker = EncoderWorker("gif", Recorder("a.gif"), {"preview"})
    for number in range(10):
        worker.write(Frame(number))
    worker.finish()
    assert worker.writer.numbers == list(range(10)) and worker.writer.committed and worker.frames == 10
    failing = EncoderWorker("mp4", Recorder("b.mp4", fail_at=3), {"rgb"})
    with pytest.raises(RenderError, match="b.mp4: encoder failed: disk full"):
        for number in range(10):
            failing.write(Frame(number))
        failing.end_input()
    failing.abort()
    assert failing.writer.numbers == [0, 1, 2] and failing.writer.aborted and not failing.writer.committed


def test_a_batch_job_sends_its_files_to_one_child_and_writes_a_frames_folder_itself(tmp_path):
    palette = palette_table("magma").tobytes()
    specs = [
        GifSpec(tmp_path / "job.gif", 24, 16, 10, 0, "c", palette),
        PngSpec(tmp_path / "job.png", 48, 32, "c"),
        FramesDirSpec(tmp_path / "frames", "job", "c"),
    ]
    alone = open_workers(specs, tmp_path / "job")
    assert [(w.name, type(w.writer)) for w in alone] == [
        ("gif", GifWriter),
        ("png", PngWriter),
        ("frames", FramesDirWriter),
    ]
    assert [w.reads for w in alone] == [{"preview"}, {"last_rgb"}, {"rgb"}]
    batched = open_workers(specs, tmp_path / "job", own_process=True)
    assert [(w.name, type(w.writer)) for w in batched] == [
        ("gif+png", EncoderProcess),
        ("frames", FramesDirWriter),
    ]
    assert batched[0].reads == {"preview", "last_rgb"} and batched[0].writer.path == tmp_path / "job"
    for worker in alone + batched:
        worker.abort()
    assert list(tmp_path.iterdir()) == []
