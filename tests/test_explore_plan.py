"""An explore's plan (render/explore/plan.py): the explored preset, a candidate's preset, the
cost said first, and the bounds of the flags."""

from __future__ import annotations

import pytest

from physarum.render.base.errors import RenderError
from physarum.render.explore.plan import (
    ExploreOptions,
    candidate_preset,
    check_cost,
    check_options,
    cost_lines,
    explored_preset,
)
from physarum.render.preset import build_preset
from support import tiny_data

PRESET = build_preset(
    tiny_data(
        canvas={"width": 128, "height": 64},
        agents={"count": 8000, "spawn": "random"},
        run={"steps": 100, "steps_per_frame": 5, "warmup": 10},
        output={"formats": ["gif", "png"], "loop_mode": "crossfade"},
    ),
    "t.yaml",
)


def test_the_explored_preset_is_reduced_runs_the_steps_and_writes_a_png_alone():
    explored = explored_preset(PRESET, ExploreOptions(size=32, steps=48))
    assert (explored.canvas.width, explored.canvas.height) == (64, 32)
    assert explored.agents.count == 2000  # the same agents per pixel
    assert explored.model.sensor_distance == PRESET.model.sensor_distance / 2
    assert (explored.run.steps, explored.run.steps_per_frame, explored.run.warmup) == (48, 2, 0)
    assert explored.output.formats == ["png"] and explored.loop[0] == "none"
    same = explored_preset(PRESET, ExploreOptions(size=512))  # never enlarged; the preset's steps
    assert (same.canvas.width, same.run.steps) == (128, 100)


def test_a_candidate_is_the_explored_preset_with_its_values():
    explored = explored_preset(PRESET, ExploreOptions(size=32, steps=48))
    candidate = candidate_preset(explored, {"decay": 0.3, "turn_angle": 60.0}, "tiny-r0-001", "from tiny")
    assert (candidate.name, candidate.description) == ("tiny-r0-001", "from tiny")
    assert (candidate.model.decay, candidate.model.turn_angle) == (0.3, 60.0)
    assert candidate.model.deposit == explored.model.deposit and candidate.canvas == explored.canvas


def test_the_cost_is_said_and_a_long_one_needs_yes():
    explored = explored_preset(PRESET, ExploreOptions(size=32, steps=48))
    options = ExploreOptions(rounds=3, population=10, size=32, steps=48)
    lines = cost_lines(explored, options, "cpu", "torch")
    assert "3 rounds x 10 = 30 candidates of 64x32, 2,000 agents, 48 steps" in lines[0]
    assert "2.88e+06 agent-steps" in lines[1]  # 30 x 2000 x 48
    check_cost(explored, options, "cpu", "torch")  # seconds: no --yes needed
    many = ExploreOptions(rounds=50, population=1024, size=32, steps=48)
    with pytest.raises(RenderError, match="add --yes"):
        check_cost(explored_preset(PRESET, ExploreOptions(size=512, steps=100_000)), many, "cpu", "torch")


def test_each_candidates_own_work_is_counted_so_a_long_run_needs_yes():
    """Small candidates cost little simulation but their own work (a preset built and checked,
    writers, every frame coloured and measured): 0.7 to 0.9 s each at 64^2 to 192^2 for 24 steps
    on the 2-core CPU, so 1,024 of them (a quarter of an hour) need --yes."""
    explored = explored_preset(PRESET, ExploreOptions(size=32, steps=48))
    options = ExploreOptions(rounds=1, population=1024, size=32, steps=48)
    with pytest.raises(RenderError, match="add --yes"):
        check_cost(explored, options, "cpu", "torch")
    assert "minutes" in cost_lines(explored, options, "cpu", "torch")[1]
    check_cost(
        explored, ExploreOptions(rounds=1, population=1024, size=32, steps=48, yes=True), "cpu", "torch"
    )


def test_flags_out_of_bounds_are_named_together():
    with pytest.raises(RenderError) as error:
        check_options(ExploreOptions(rounds=0, population=1, size=8, steps=0, seed=-1, keep=0))
    text = str(error.value)
    for flag in ("--rounds", "--population", "--size", "--steps", "--seed", "--keep"):
        assert flag in text
    with pytest.raises(RenderError, match="at most 8,192"):
        check_options(ExploreOptions(rounds=50, population=1024, keep=1))
    with pytest.raises(RenderError, match="3D"):
        explored_preset(
            build_preset(tiny_data(canvas={"width": 32, "height": 32, "depth": 16}), "t.yaml"),
            ExploreOptions(),
        )


def test_the_default_keep_is_twelve_or_every_candidate():
    few = ExploreOptions(rounds=1, population=4)
    check_options(few)  # no --keep given: not refused for keeping more than there are
    assert few.keep_count == 4 and ExploreOptions(rounds=2, population=24).keep_count == 12
    assert ExploreOptions(rounds=2, population=24, keep=30).keep_count == 30
