"""The sweep file's schema: each section's problems and those between sections, every one at
once, each naming the file, the key path, the bad value and what is allowed."""

from __future__ import annotations

import pytest

from physarum.render.preset import PresetError
from physarum.render.sweep import expand_sweep, read_sections
from support import SWEEP_BASE, expand_inline


def sweep_problems(sections: dict, base: dict | None = None) -> list[str]:
    with pytest.raises(PresetError) as caught:
        expand_inline(sections, base)
    return caught.value.problems


def test_zip_lists_of_different_lengths_are_an_error():
    problems = sweep_problems({"zip": {"model.decay": [0.05, 0.1, 0.2], "model.deposit": [2, 4]}})
    assert problems == [
        "s.yaml: zip: the lists must have equal lengths to be walked together "
        "(got model.decay: 3, model.deposit: 2)"
    ]


def test_malformed_sweeps_name_each_problem():
    problems = "\n".join(
        sweep_problems(
            {
                "gird": {"model.decay": [0.1]},
                "grid": {"model.sensr_angle": [10], "model.decay": 0.1, "name": ["x"]},
                "random": {
                    "count": 2,
                    "params": {
                        "model.turn_angle": {"normal": [0, 1]},
                        "model.deposit": {"log_uniform": [0, 1]},
                    },
                },
                "seeds": [1, 1],
            }
        )
    )
    assert "s.yaml: gird: unknown key; did you mean 'grid'?" in problems
    assert "model.sensr_angle: unknown key 'sensr_angle' in model; did you mean 'sensor_angle'?" in problems
    assert "grid.model.decay: a non-empty list of values (got 0.1)" in problems
    assert "name: the sweep names its jobs" in problems
    assert "random.params.model.turn_angle: one of {uniform: [lo, hi]}" in problems
    assert "random.params.model.deposit: log_uniform: lo must be greater than 0" in problems
    assert "seeds: each seed once" in problems


def test_sections_with_problems_leave_the_others_checked_against_each_other():
    problems = sweep_problems(
        {
            "gird": {"model.decay": [0.1]},
            "grid": {"model.decay": [0.1, 0.2]},
            "zip": {"model.decay": [0.3]},
            "random": {"count": 2.0, "params": {"model.turn_angle": {"uniform": [10, 20]}}},
            "seeds": [1, -1],
        }
    )
    assert problems == [
        "s.yaml: random.count: a whole number of samples, 1 .. 100000 (got 2.0)",
        "s.yaml: seeds: a non-empty list of whole numbers in 0 .. 2^32-1 (got [1, -1])",
        "s.yaml: gird: unknown key; did you mean 'grid'? allowed: name, description, base, grid, zip, "
        "random, seeds",
        "s.yaml: model.decay: swept twice (also as model.decay); each key in one section only",
    ]
    sections, problems = read_sections({"base": SWEEP_BASE, "grid": {"model.decay": [0.1]}, "seeds": [1, 1]})
    assert sections.grid == {"model.decay": [0.1]} and sections.seeds is None and len(problems) == 1


def test_types_are_strict_and_keys_are_named_with_their_section():
    problems = sweep_problems(
        {
            "description": 5,
            "zip": {"model.decy": [0.1]},
            "random": {
                "cuont": 2,
                "count": 2,
                "params": {"model.decay": {"uniform": [True, 0.2]}, "model.deposit": {"uniform": [1, 2, 3]}},
            },
        }
    )
    assert problems == [
        "s.yaml: description: Input should be a valid string (got 5)",
        "s.yaml: zip.model.decy: unknown key 'decy' in model; did you mean 'decay'? allowed there: "
        "sensor_angle, sensor_distance, turn_angle, step_size, deposit, diffuse, decay, units",
        "s.yaml: random.params.model.decay: uniform: [lo, hi], two finite numbers (got {'uniform': [True, 0.2]})",
        "s.yaml: random.params.model.deposit: uniform: [lo, hi], two finite numbers (got {'uniform': [1, 2, 3]})",
        "s.yaml: random.cuont: unknown key; did you mean 'count'? allowed: count, seed, params",
    ]


def test_a_missing_base_or_one_of_the_wrong_type_is_reported_once():
    required = "base: a preset file (relative to the sweep file) or a preset mapping is required"
    assert sweep_problems({"base": 5}) == [f"s.yaml: {required} (got 5)"]
    with pytest.raises(PresetError) as caught:
        expand_sweep({"grid": {"model.decay": [0.1]}}, "s.yaml")
    assert caught.value.problems == [f"s.yaml: {required} (got None)"]


@pytest.mark.parametrize("key", [None, 2.5, 1])
def test_a_top_level_key_that_is_no_text_is_one_problem(key):
    """`null: 3` or `2.5: x` at the top of a sweep file: pydantic names the key by another value,
    so it was kept, validated again and raised a traceback (found by tests/test_fuzz.py)."""
    sections, problems = read_sections({"name": "s", "base": SWEEP_BASE, key: 3})
    assert problems == [f"{key}: Keys should be strings (got {key})"] and sections.name == "s"
    with pytest.raises(PresetError, match="Keys should be strings"):
        expand_sweep({"name": "s", "base": SWEEP_BASE, key: 3}, "s.yaml")
