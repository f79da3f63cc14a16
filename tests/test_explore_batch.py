"""A round's candidates (render/explore/batch.py): round 0 holds the preset itself and its
mutations, later rounds children of the most novel, and a mutation the checks refuse is drawn
again."""

from __future__ import annotations

from physarum.render.explore.batch import accepts, parents_count, round_candidates
from physarum.render.explore.mutate import mutable_values
from physarum.render.explore.plan import ExploreOptions, explored_preset
from physarum.render.preset import build_preset
from support import tiny_data

OPTIONS = ExploreOptions(rounds=2, population=6, size=32, steps=12, seed=5)
ORIGIN = {"sensor_angle": 45.0, "turn_angle": 45.0, "deposit": 3.0, "decay": 0.1}


def test_round_zero_holds_the_preset_and_later_rounds_children_of_the_most_novel():
    first = round_candidates(0, ORIGIN, OPTIONS, [])
    assert [c.id for c in first] == [f"r0-{i:03d}" for i in range(6)]
    assert first[0].values == ORIGIN and all(c.values != ORIGIN for c in first[1:])
    novel = [{"id": c.id, "values": c.values} for c in reversed(first)]
    children = round_candidates(1, ORIGIN, OPTIONS, novel)
    assert parents_count(6) == 2
    assert [c.parent for c in children] == ["r0-005", "r0-004"] * 3
    assert round_candidates(1, ORIGIN, OPTIONS, novel) == children  # reproducible


def test_a_refused_mutation_is_drawn_again_then_the_parent_stands():
    first = round_candidates(0, ORIGIN, OPTIONS, [])
    low = round_candidates(0, ORIGIN, OPTIONS, [], lambda v: v["sensor_angle"] <= 45)
    assert all(c.values["sensor_angle"] <= 45 for c in low)
    assert any(a.values != b.values for a, b in zip(first, low))
    never = round_candidates(0, ORIGIN, OPTIONS, [], lambda v: False)
    assert all(c.values == ORIGIN for c in never)


def test_the_checks_refuse_a_sensor_distance_beyond_the_canvas():
    explored = explored_preset(build_preset(tiny_data(canvas={"width": 32, "height": 32}), "t.yaml"), OPTIONS)
    check = accepts(explored)
    origin = mutable_values(explored.model_dump()["model"])
    assert check(origin)
    assert not check({**origin, "sensor_distance": 1000.0})
