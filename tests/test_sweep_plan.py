"""Planning: chunks grouped by shape, split by batch size and spread over workers."""

from __future__ import annotations

from physarum.render import sweep as sweeps
from physarum.render.sim.simulation import batch_key
from support import expand_inline


def test_chunks_group_by_shape_split_by_batch_and_spread_over_workers():
    sweep = expand_inline({"grid": {"canvas.width": [32, 40], "model.decay": [0.1, 0.2, 0.3, 0.4, 0.5]}})
    chunks = sweeps.plan_chunks(sweep.jobs, max_batch=64)
    assert sorted(len(c) for c in chunks) == [5, 5]
    assert all(len({batch_key(j.preset) for j in c}) == 1 for c in chunks)
    assert sorted(len(c) for c in sweeps.plan_chunks(sweep.jobs, max_batch=2)) == [1, 1, 2, 2, 2, 2]
    spread = sweeps.plan_chunks(sweep.jobs, max_batch=64, workers=4)
    assert sorted(len(c) for c in spread) == [2, 2, 3, 3]
    # interleaved: each chunk takes every other job of the grid, not one half of it
    assert sorted([j.index for j in c] for c in sweeps.plan_chunks(sweep.jobs[:4], max_batch=2)) == [
        [0, 2],
        [1, 3],
    ]
