"""The spatial sort of the agents (kernels/triton_sort.py) in Triton's CPU interpreter: lanes in
tile order, whole agents moved, stable, segment by segment.

Run with TRITON_INTERPRET=1 set before Python starts (as tests/test_kernels_triton.py).
"""

from __future__ import annotations

import pytest
import torch

from physarum.kernels import api
from physarum.kernels.spawn import spawn

pytestmark = pytest.mark.interpreter(cpu=True)  # skipped by conftest.py where it cannot run


def _tile_order(position: torch.Tensor, tile: int) -> torch.Tensor:
    """[B, N] int64 rank-preserving key of (tile row, tile column, row, column in the tile),
    packed with room to spare rather than with the kernel's tiles-across count."""
    column, row = position[:, 0] >> api.FRAC_BITS, position[:, 1] >> api.FRAC_BITS
    key = (row // tile).to(torch.int64) << 40
    key |= (column // tile).to(torch.int64) << 20
    return key | ((row % tile) * tile + column % tile).to(torch.int64)


@pytest.mark.parametrize("tile", [1, 7, 16])
def test_sort_agents_orders_lanes_by_tile_and_moves_whole_agents(monkeypatch, tile):
    from physarum.kernels import triton_sort

    monkeypatch.setattr(triton_sort, "SORT_TILE", tile)
    batch, agents, width, height = 2, 2500, 61, 45
    state = spawn([1, 2], agents, width, height, "random")
    position, heading = state.position.clone(), state.heading.clone()
    identity = torch.arange(agents, dtype=torch.int32).repeat(batch, 1)
    agent_id = identity.clone()
    triton_sort.sort_agents(position, heading, agent_id, width)

    assert torch.equal(agent_id.sort(dim=1).values, identity), "not a permutation"
    assert (agent_id != identity).float().mean() > 0.9, "the order barely changed"
    lane_agent = agent_id.to(torch.int64)
    assert torch.equal(position, state.position.gather(2, lane_agent[:, None].expand(-1, 2, -1)))
    assert torch.equal(heading, state.heading.gather(1, lane_agent))
    key = _tile_order(position, tile)
    assert (key[:, 1:] >= key[:, :-1]).all(), "lanes are not in tile order"
    ties = key[:, 1:] == key[:, :-1]
    assert ties.any() and (agent_id[:, 1:] > agent_id[:, :-1])[ties].all(), "not stable"


def test_sort_agents_in_segments_orders_each_segment(monkeypatch):
    # Segments of 700 lanes over 1500 agents: three, the last one short.
    from physarum.kernels import triton_sort

    monkeypatch.setattr(triton_sort, "SORT_SEGMENT", 700)
    state = spawn([7, 8], 1500, 41, 27, "random")
    position, heading = state.position.clone(), state.heading.clone()
    agent_id = torch.arange(1500, dtype=torch.int32).repeat(2, 1)
    triton_sort.sort_agents(position, heading, agent_id, 41)
    key = _tile_order(position, triton_sort.SORT_TILE)
    for start, end in ((0, 700), (700, 1400), (1400, 1500)):
        segment = key[:, start:end]
        assert (segment[:, 1:] >= segment[:, :-1]).all(), f"lanes {start}..{end} not in order"
        ids = agent_id[:, start:end].sort(dim=1).values
        assert torch.equal(ids, torch.arange(start, end, dtype=torch.int32).repeat(2, 1))
