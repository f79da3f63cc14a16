"""Twins (render/analysis/twins.py): decisive trail cells really change a turn, agent and trail
twins are not silent, twins take turns between the kinds, and fill-ins are seeded."""

from __future__ import annotations

import math

import pytest
import torch

from physarum.kernels import reference
from physarum.kernels.exact import build_tables
from physarum.kernels.spawn import spawn
from physarum.render.analysis.batch import RunOptions, run_twins
from physarum.render.analysis.twins import (
    Twin,
    choose_agent_twins,
    choose_trail_twins,
    decisive_cells,
    twin_kinds,
)
from physarum.render.preset import build_preset
from support import tiny, tiny_data


def dense(**model):
    """64 x 64 with 4000 agents: enough agents that some stand one 16.16 unit short of a cell
    boundary within the look-ahead."""
    data = tiny_data(canvas={"width": 64, "height": 64}, agents={"count": 4000})
    data["model"].update(model)
    return build_preset(data, "dense.yaml")


def test_a_decisive_trail_cell_parts_the_agents_at_the_next_step():
    preset = tiny()
    series = run_twins([preset], RunOptions(steps=30, twins=("trail", "trail")))
    for k, twin in enumerate(series.twins[0]):
        assert twin.kind == "trail" and twin.found
        l1, distance = series.metrics[0, k, :, 0], series.metrics[0, k, :, 2]
        assert 0 < l1[0] < 1e-6  # one ulp in one cell
        assert distance[0] == 0 and distance[1] > 0  # an agent turned differently at once
        assert l1.max() > 1e-4


def test_decisive_cells_really_change_a_turn():
    preset = tiny()
    state = spawn([preset.seed], preset.agents.count, 48, 32)
    tables = build_tables([preset.model_params()])
    simulation = reference.TorchSimulation(state, tables)
    simulation.advance(1)  # ties (equal readings) are common only while the trail is young
    cells = decisive_cells(simulation.state, tables)[0]
    assert len(cells) > 0
    base = simulation.state
    after = reference.step(base, tables)
    for cell in cells[:5].tolist():
        raised = base.clone()
        flat = raised.trail.view(-1)
        flat[cell] = torch.nextafter(flat[cell], torch.tensor(math.inf))
        assert not torch.equal(reference.step(raised, tables).heading, after.heading)


def test_an_agent_shifted_by_one_unit_diverges():
    series = run_twins([dense()], RunOptions(steps=60, twins=("agent",)))
    twin = series.twins[0][0]
    l1, distance = series.metrics[0, 0, :, 0], series.metrics[0, 0, :, 2]
    assert twin.kind == "agent" and twin.found
    assert l1[0] == 0 and distance[0] == pytest.approx(1 / 65536 / 4000)
    assert l1.max() > 0


def test_twin_kinds_alternate():
    assert twin_kinds(5) == ["agent", "trail", "agent", "trail", "agent"]
    assert Twin("trail", 3 * 48 + 5).describe(48) == "cell (5, 3)"


def test_no_cell_is_decisive_where_agents_cannot_turn():
    preset = tiny(turn_angle=0.0)
    tables = build_tables([preset.model_params()])
    simulation = reference.TorchSimulation(spawn([preset.seed], preset.agents.count, 48, 32), tables)
    simulation.advance(1)
    assert len(decisive_cells(simulation.state, tables)[0]) == 0
    twins = choose_trail_twins(simulation.state, tables, 2, preset.seed)[0]
    assert [t.found for t in twins] == [False, False]


def test_agent_twins_fill_in_at_random_where_the_look_ahead_finds_none():
    preset = tiny()
    tables = build_tables([preset.model_params()])

    def chosen():
        simulation = reference.TorchSimulation(spawn([preset.seed], preset.agents.count, 48, 32), tables)
        return choose_agent_twins(simulation, 5, preset.seed, lookahead=0)[0]

    twins = chosen()
    assert [(t.kind, t.found) for t in twins] == [("agent", False)] * 5
    targets = [t.target for t in twins]
    assert len(set(targets)) == 5 and all(0 <= a < preset.agents.count for a in targets)
    assert chosen() == twins  # seeded by the preset's seed
