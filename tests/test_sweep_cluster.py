"""Ray: the batches of a sweep as Ray tasks, on the CPU."""

from __future__ import annotations

import pytest
from PIL import Image

from physarum.render import sweep as sweeps
from support import write_sweep

pytestmark = pytest.mark.slow  # starts a Ray cluster


def test_ray_runs_the_batches_as_tasks_on_the_cpu(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'physarum[ray]'")
    path = write_sweep(tmp_path, grid={"model.decay": [0.1, 0.2, 0.3]})
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        summary = sweeps.run_sweep(
            sweeps.load_sweep(path),
            sweeps.SweepOptions(ray="auto", out_dir=tmp_path / "out", quiet=True, gallery=False),
            log=lambda line: None,
        )
    finally:
        ray.shutdown()
    assert [r["status"] for r in summary.records] == ["done"] * 3
    assert sorted(r["batch"] for r in summary.records) == [1, 2, 2]  # spread over 2 CPUs
    for record in summary.records:
        with Image.open(summary.sweep_dir / record["outputs"]["gif"]) as gif:
            assert gif.n_frames == 4
