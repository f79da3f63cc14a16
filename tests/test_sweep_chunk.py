"""One chunk of a sweep's jobs on one device (render/sweep/chunk.py): memory that runs out."""

from __future__ import annotations

import pytest
import torch

from physarum.kernels import get_backend
from physarum.render.sweep.chunk import run_chunk
from support import expand_inline


@pytest.mark.parametrize(
    "error",
    [
        lambda: torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0)"),
        lambda: RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: out of memory"),
        MemoryError,
    ],
)
def test_memory_that_runs_out_halves_the_batch_then_fails_each_job_with_one_message(
    tmp_path, monkeypatch, error
):
    """A batch that runs out of memory is halved down to single jobs (on the GPU or the host);
    each job that still fails keeps the one message `physarum render` prints for it, not the
    error's raw text and traceback."""
    batches = []

    def allocation_fails(self, steps):
        batches.append(self.trail.shape[0])
        raise error()

    monkeypatch.setattr(get_backend("torch"), "advance", allocation_fails)
    sweep = expand_inline({"grid": {"model.sensor_angle": [15, 30, 45, 60]}, "seeds": [1]})
    chunk = [{"id": job.id, "preset": job.preset.model_dump(mode="json")} for job in sweep.jobs]
    outcomes = run_chunk(chunk, str(tmp_path), "cpu", "torch")
    assert [o["status"] for o in outcomes] == ["failed"] * 4, outcomes
    assert sorted(set(batches)) == [1, 2, 4], (batches, outcomes)  # 4 jobs, then 2, then 1 at a time
    for outcome in outcomes:
        assert outcome["error"].startswith("out of memory while running (after the memory check passed)")
        assert len(outcome["error"].splitlines()) == 1 and "File " not in outcome["error"]
