"""The runner: render and render_batch, from a preset to finished files and their sidecar."""

from __future__ import annotations

import av
import pytest

from physarum.render import runner
from physarum.render.preset import build_preset
from support import tiny_data


@pytest.mark.parametrize("formats", [["gif"], ["png"], ["mp4"]], ids=lambda f: f[0])
def test_a_batch_of_one_format_renders_each_job_as_alone(tmp_path, formats):
    """Each job of a batch sends its outputs to a child process; with a single format that
    child gets only what the format reads, and every job's file is the single render's."""
    presets = [
        build_preset(tiny_data(name=f"job{i}", seed=i, output={"formats": formats}), "t.yaml")
        for i in range(2)
    ]
    batch = runner.render_batch(
        presets, backend="torch", device="cpu", out_dir=tmp_path / "batch", quiet=True
    )
    assert [r.error for r in batch] == [None, None]
    fmt = formats[0]
    for preset, result in zip(presets, batch):
        assert sorted(result.outputs) == sorted([fmt, "json"])
        alone = runner.render(preset, backend="torch", device="cpu", out_dir=tmp_path / "alone", quiet=True)
        if fmt == "mp4":  # x264's bytes depend on the process (render/encoder_process.py)
            with av.open(str(result.outputs[fmt])) as video:
                assert sum(1 for _ in video.decode(video=0)) == preset.frames
        else:
            assert result.outputs[fmt].read_bytes() == alone.outputs[fmt].read_bytes(), preset.name
    assert batch[0].outputs[fmt].read_bytes() != batch[1].outputs[fmt].read_bytes()
