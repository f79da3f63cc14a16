"""The frame path: ring buffers, what the pipeline makes for the writers, the encoder workers."""

from __future__ import annotations

import time

import numpy as np
from PIL import Image

from physarum.render.encode import GifWriter
from physarum.render.frames import FramePipeline
from support import render_tiny


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
