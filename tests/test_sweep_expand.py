"""A sweep's jobs: grid x zip x random samples x seeds in order, reproducible random draws, base
presets and preview sizes, and every invalid job reported at once with its values."""

from __future__ import annotations

import copy

import pytest
import yaml

from physarum.render import sweep as sweeps
from physarum.render.cli.main import main
from physarum.render.preset import PresetError
from support import SWEEP_BASE, expand_inline, write_sweep


def test_grid_zip_random_and_seeds_combine_in_order():
    sweep = expand_inline(
        {
            "grid": {"model.sensor_angle": [15, 45], "model.turn_angle": [10, 20, 30]},
            "zip": {"model.decay": [0.05, 0.1], "model.deposit": [2, 4]},
            "random": {"count": 2, "seed": 1, "params": {"model.diffuse": {"uniform": [0.1, 0.9]}}},
            "seeds": [7, 8],
        }
    )
    assert len(sweep.jobs) == 2 * 3 * 2 * 2 * 2
    first, last = sweep.jobs[0], sweep.jobs[-1]
    assert list(first.params) == [
        "model.sensor_angle",
        "model.turn_angle",
        "model.decay",
        "model.deposit",
        "model.diffuse",
        "seed",
    ]
    assert (first.params["model.sensor_angle"], first.params["model.turn_angle"], first.params["seed"]) == (
        15,
        10,
        7,
    )
    assert (last.params["model.sensor_angle"], last.params["model.turn_angle"], last.params["seed"]) == (
        45,
        30,
        8,
    )
    assert {(j.params["model.decay"], j.params["model.deposit"]) for j in sweep.jobs} == {(0.05, 2), (0.1, 4)}
    assert first.preset.model.sensor_angle == 15 and first.preset.seed == 7 and last.preset.seed == 8
    assert [j.name for j in sweep.jobs[:2]] == ["s-0000", "s-0001"] and sweep.jobs[5].preset.name == "s-0005"
    assert len({j.id for j in sweep.jobs}) == len(sweep.jobs)
    assert [j.id for j in expand_inline({"grid": {"model.sensor_angle": [15, 45]}}).jobs] == [
        j.id for j in expand_inline({"grid": {"model.sensor_angle": [15, 45]}}).jobs
    ]


def test_random_samples_are_reproducible_and_in_range():
    section = {
        "random": {
            "count": 20,
            "seed": 5,
            "params": {
                "model.sensor_angle": {"uniform": [10, 90]},
                "model.decay": {"log_uniform": [0.01, 0.3]},
                "agents.count": {"uniform": [100, 500]},
                "palette.names": {"choice": [["magma"], ["ice"]]},
            },
        }
    }
    one, two = expand_inline(section), expand_inline(section)
    values = [j.params for j in one.jobs]
    assert values == [j.params for j in two.jobs]
    assert [j.id for j in one.jobs] == [j.id for j in two.jobs]
    other = copy.deepcopy(section)
    other["random"]["seed"] = 6
    assert values != [j.params for j in expand_inline(other).jobs]
    assert all(
        10 <= v["model.sensor_angle"] <= 90 and isinstance(v["model.sensor_angle"], float) for v in values
    )
    assert all(0.01 <= v["model.decay"] <= 0.3 for v in values)
    assert all(isinstance(v["agents.count"], int) and 100 <= v["agents.count"] <= 500 for v in values)
    assert {tuple(v["palette.names"]) for v in values} == {("magma",), ("ice",)}
    many = expand_inline(
        {"random": {"count": 400, "seed": 5, "params": {"model.decay": {"log_uniform": [0.01, 0.3]}}}}
    )
    decays = sorted(j.params["model.decay"] for j in many.jobs)
    assert 0.04 < decays[200] < 0.075  # log-uniform: the median is near sqrt(0.01 * 0.3) = 0.055, not 0.155


def test_base_preset_file_relative_to_the_sweep_and_previews_capped(tmp_path):
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "big.yaml").write_text(
        yaml.safe_dump({**SWEEP_BASE, "name": "big", "canvas": {"width": 1024, "height": 512}})
    )
    (tmp_path / "sweeps").mkdir()
    path = tmp_path / "sweeps" / "Big Sweep.yaml"
    path.write_text("base: ../presets/big.yaml\ngrid: {model.decay: [0.1, 0.2]}\n")
    sweep = sweeps.load_sweep(path)
    assert sweep.name == "big-sweep" and sweep.jobs[0].preset.name == "big-sweep-0000"
    assert sweep.jobs[0].preset.output.gif_scale == 0.25  # previews at most 256 px
    kept = expand_inline(
        {"grid": {"output.gif_scale": [0.5]}}, {**SWEEP_BASE, "canvas": {"width": 1024, "height": 512}}
    )
    assert kept.jobs[0].preset.output.gif_scale == 0.5


def test_every_invalid_job_is_reported_at_once_with_its_values(tmp_path, capsys):
    path = write_sweep(tmp_path, grid={"model.sensor_angle": [45, 200, 300], "model.decay": [0.1, 1.5]})
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "s-0001 (model.sensor_angle=45, model.decay=1.5): model.decay: Input should be less than 1" in err
    assert (
        "s-0002 (model.sensor_angle=200, model.decay=0.1): model.sensor_angle: Input should be less "
        "than or equal to 180 (got 200)" in err
    )
    assert "s-0005 (model.sensor_angle=300, model.decay=1.5)" in err
    assert "5 of 6 jobs are invalid; nothing was rendered" in err
    assert not out.exists()


def test_jobs_that_resolve_to_the_same_preset_are_refused_naming_both():
    with pytest.raises(PresetError) as caught:
        expand_inline({"grid": {"model.decay": [0.05, 0.1, 0.05], "model.deposit": [2, 2.0]}})
    problems = caught.value.problems
    assert problems[0] == (
        "s.yaml: jobs s-0000 (model.decay=0.05, model.deposit=2) and s-0001 (model.decay=0.05, "
        "model.deposit=2) resolve to the same preset; each job once"
    )
    assert len(problems) == 4  # 6 jobs, 2 distinct: one problem for each of the 4 repeats
    base_decay = SWEEP_BASE["model"]["decay"]
    with pytest.raises(PresetError, match="s-0000 .* and s-0001 .* resolve to the same preset"):
        expand_inline({"zip": {"model.decay": [base_decay, base_decay]}})


def test_a_sweep_varies_a_schedules_keyframes_and_easing():
    base = copy.deepcopy(SWEEP_BASE)
    base["model"]["sensor_angle"] = {"ease": "smooth", "keys": {0: 20, "50%": 60, "100%": 20}}
    sweep = expand_inline(
        {"grid": {"model.sensor_angle.keys.50%": [45, 90], "model.sensor_angle.ease": ["linear", "smooth"]}},
        base,
    )
    schedules = [job.preset.model.sensor_angle for job in sweep.jobs]
    assert [(s.keys["50%"], s.ease) for s in schedules] == [
        (45, "linear"),
        (45, "smooth"),
        (90, "linear"),
        (90, "smooth"),
    ]
    assert all(s.keys[0] == 20 and s.keys["100%"] == 20 for s in schedules)  # the rest as the base has it


def test_a_keyframe_of_a_plain_number_says_to_give_it_a_schedule_first():
    with pytest.raises(PresetError) as caught:
        expand_inline({"grid": {"model.decay.keys.3": [0.1, 0.2]}})
    assert "'decay' is a number, not a schedule: give it one first (model.decay={keys: {0: " in str(
        caught.value
    )
