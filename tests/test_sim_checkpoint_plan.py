"""A render's files written at its stops, known before it starts (render/sim/checkpoint_plan.py):
its volume exports (output.volume) capped at MAX_VOLUMES and counted against the disk's free
bytes with its checkpoints, one message before anything is written."""

from __future__ import annotations

import os

import pytest
import yaml

from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from physarum.render.preset import build_preset
from physarum.render.sim import checkpoint_plan
from physarum.render.sim.checkpoint_plan import MAX_VOLUMES, volume_export_bytes
from physarum.render.sim.checkpoint_plan import checkpoint_plan as plan_of
from support import tiny_3d, tiny_data


def volume_preset(volume: dict, **sections):
    return build_preset(tiny_3d(output={"formats": ["png"], "volume": volume}, **sections), "t.yaml")


def test_volumes_every_step_are_capped_in_one_message(tmp_path, capsys):
    """output.volume.every: 1 on a long run wrote a whole volume every step, without bound."""
    run = {"steps": 600, "steps_per_frame": 100}
    with pytest.raises(RenderError, match=rf"schedules 600 volumes .* at most {MAX_VOLUMES}"):
        plan_of([volume_preset({"every": 1}, run=run)], tmp_path)
    assert plan_of([volume_preset({"every": 6}, run=run)], tmp_path) is None  # 100: allowed
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump(tiny_3d(run=run, output={"formats": ["png"], "volume": {"every": 1}})))
    capsys.readouterr()
    assert main(["render", str(path), "--out", str(tmp_path / "o"), "--device", "cpu", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "output.volume" in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists() or not any(p.is_file() for p in (tmp_path / "o").rglob("*"))


def test_volumes_that_do_not_fit_on_the_disk_are_refused_before_work(tmp_path, monkeypatch):
    preset = volume_preset({"at": [3, 6], "formats": ["npz", "npy", "obj", "stl"]})
    each = volume_export_bytes(preset)
    voxels = 16 * 12 * 10
    assert each >= voxels * 8  # the float32 volume twice, at least
    monkeypatch.setattr(checkpoint_plan, "free_bytes", lambda folder: 2 * each)
    assert plan_of([preset], tmp_path) is None
    monkeypatch.setattr(checkpoint_plan, "free_bytes", lambda folder: 2 * each - 1)
    with pytest.raises(RenderError, match=r"2 volume exports .* do not fit in the .* free on the disk"):
        plan_of([preset], tmp_path)
    stacked = build_preset(tiny_data(output={"formats": ["gif"], "volume": {"formats": ["npz"]}}), "t.yaml")
    monkeypatch.setattr(checkpoint_plan, "free_bytes", lambda folder: 1000)  # a 2D preset's stack too
    with pytest.raises(RenderError, match=r"1 volume export \(each up to"):
        plan_of([stacked], tmp_path)
    assert os.listdir(tmp_path) == []
