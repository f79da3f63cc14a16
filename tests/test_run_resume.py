"""What a branch of a checkpoint may change, and the keys a refusal names."""

from __future__ import annotations

import pytest

from physarum.render.preset import build_preset
from physarum.render.run.resume import branch_problems, flatten
from support import tiny_data

STORED = build_preset(tiny_data(), "tiny.yaml")


def branched(*settings: str):
    return build_preset(tiny_data(), "tiny.yaml", list(settings))


@pytest.mark.parametrize(
    "setting",
    ["model.decay=0.2", "seed=9", "palette.names=[viridis]", "output.fps=10", "run.steps=40", "name=other"],
)
def test_a_branch_may_change_what_acts_on_the_state(setting):
    assert branch_problems(STORED, branched(setting), step=5) == []


@pytest.mark.parametrize(
    "setting, key", [("canvas.height=40", "canvas.height"), ("agents.radius=0.2", "agents.radius")]
)
def test_a_branch_may_not_change_the_states_shape_or_world(setting, key):
    problems = branch_problems(STORED, branched(setting), step=5)
    assert len(problems) == 1 and problems[0].startswith(f"{key}:")


def test_a_branch_needs_steps_left_after_the_checkpoint():
    problems = branch_problems(STORED, STORED, step=STORED.end_step)
    assert len(problems) == 1 and "run.steps=MORE" in problems[0]


def test_flatten_names_every_leaf_by_its_dotted_key():
    assert flatten({"a": {"b": 1, "c": [2, {"d": 3}]}, "e": {}}) == {
        "a.b": 1,
        "a.c.0": 2,
        "a.c.1.d": 3,
        "e": {},
    }


def test_resume_refuses_stats_in_one_message(tmp_path, capsys):
    from physarum.render.cli.main import main

    assert main(["render", "--resume", str(tmp_path / "any.npz"), "--stats"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--stats" in err[0]
