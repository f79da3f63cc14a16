"""Running twins (render/analysis/batch.py): batched plane points match single runs, deposit is a
pure scale of the model, and the Triton backend gives the reference's twins and divergences."""

from __future__ import annotations

import numpy as np
import pytest

from physarum.render.analysis.batch import RunOptions, run_twins
from physarum.render.analysis.plane import parse_plane_axis, plane_presets
from support import tiny


def test_deposit_is_a_pure_scale_of_the_model():
    """Doubling deposit doubles every trail value exactly (binary floating point), so agents
    take the same paths and normalised divergences agree bit for bit (from the first step on: a
    trail twin raised from 0 to TRAIL_FLOOR starts at a divergence that does not scale)."""
    options = RunOptions(steps=25, twins=("agent", "trail"))
    one = run_twins([tiny(deposit=1.0)], options)
    two = run_twins([tiny(deposit=2.0)], options)
    assert one.twins == two.twins
    assert np.array_equal(one.metrics[:, :, 1:], two.metrics[:, :, 1:])
    assert one.metrics[0, 1, -1, 0] > 0.01  # the twins did part


def test_plane_points_run_batched_like_single_runs():
    axes = [parse_plane_axis("model.decay=0.05:0.2:2"), parse_plane_axis("model.turn_angle=30:60:2")]
    presets = plane_presets(tiny(), axes)
    assert [(p.model.decay, p.model.turn_angle) for p in presets] == [
        (0.05, 30.0),
        (0.05, 60.0),
        (0.2, 30.0),
        (0.2, 60.0),
    ]
    options = RunOptions(steps=12, twins=("trail",))
    batched = run_twins(presets, options)
    alone = run_twins([presets[2]], options)
    assert batched.twins[2] == alone.twins[0]
    assert np.array_equal(batched.metrics[2], alone.metrics[0])


@pytest.mark.interpreter(cpu=True)
@pytest.mark.slow
def test_triton_twins_match_the_reference(monkeypatch):
    """The Triton backend sorts its agents by cell (at once, then every SORT_EVERY steps); twins
    still compare same-index agents, in spawn order."""
    from physarum.kernels import triton_kernels

    monkeypatch.setattr(triton_kernels, "DIFFUSE_BLOCK_H", 16)
    monkeypatch.setattr(triton_kernels, "DIFFUSE_BLOCK_W", 64)
    options = RunOptions(steps=8, twins=("agent", "trail"), lookahead=4)
    torch_series = run_twins([tiny()], options)
    options.backend = "triton"
    triton_series = run_twins([tiny()], options)
    assert triton_series.twins == torch_series.twins
    assert np.array_equal(triton_series.metrics, torch_series.metrics)
