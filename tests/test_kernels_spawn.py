"""Spawning (kernels/spawn.py): every pattern inside the canvas and reproducible, the shapes of
disk, ring and center, image spawns following their weights exactly."""

from __future__ import annotations

import pytest
import torch

from naive import FRAC, HEADINGS
from physarum.kernels import exact
from physarum.kernels.spawn import SPAWNS, spawn

ONE_CELL = 1 << FRAC


def density(height: int, width: int) -> torch.Tensor:
    """Weights for `image` spawns: uneven, with empty cells."""
    return (torch.arange(height * width).reshape(height, width) * 7919) % 11


@pytest.mark.parametrize("how", SPAWNS)
def test_spawn_inside_canvas_and_reproducible(how):
    width, height, agents = 13, 11, 500
    extra = dict(density=density(height, width)) if how == "image" else {}
    state = spawn([1, 2], agents, width, height, how, **extra)
    assert state.position.shape == (2, 2, agents) and state.position.dtype == torch.int32
    assert state.heading.shape == (2, agents) and state.heading.dtype == torch.int16
    assert state.trail.shape == (2, height, width) and float(state.trail.abs().sum()) == 0.0
    assert int(state.step) == 0
    x, y = state.position[:, 0], state.position[:, 1]
    assert int(x.min()) >= 0 and int(x.max()) < width << FRAC
    assert int(y.min()) >= 0 and int(y.max()) < height << FRAC
    assert int(state.heading.min()) >= 0 and int(state.heading.max()) < HEADINGS
    again = spawn([1, 2], agents, width, height, how, **extra)
    assert torch.equal(again.position, state.position) and torch.equal(again.heading, state.heading)
    # a different seed changes the headings (and, except for 'center', the positions)
    assert not torch.equal(state.heading[0], state.heading[1])
    if how != "center":
        assert not torch.equal(state.position[0], state.position[1])
    assert torch.equal(spawn([2], agents, width, height, how, **extra).heading[0], state.heading[1])


def test_random_spawn_covers_the_canvas():
    state = spawn([9], 2000, 7, 5, "random")
    cells = set(zip((state.position[0, 0] >> FRAC).tolist(), (state.position[0, 1] >> FRAC).tolist()))
    assert len(cells) == 35
    assert len(set(state.heading[0].tolist())) > 1400  # about 1580 expected


def _offsets_from_centre(state, width, height):
    x = state.position[0, 0].double() / ONE_CELL - width / 2
    y = state.position[0, 1].double() / ONE_CELL - height / 2
    return x, y


def _spawn_distances(kind, seed, agents, width, height, radius):
    """A spawned state, each agent's distance from the centre, and the spawn radius in pixels."""
    state = spawn([seed], agents, width, height, kind, radius=radius)
    x, y = _offsets_from_centre(state, width, height)
    return state, x, y, torch.hypot(x, y), radius * min(width, height)


def test_disk_spawn_within_radius():
    _, _, _, distance, r_max = _spawn_distances("disk", 4, 3000, 64, 48, 0.3)
    assert float(distance.max()) <= r_max + 2.0**-15
    assert float(distance.max()) > 0.95 * r_max
    assert float(distance.min()) < 0.1 * r_max
    # uniform over the area: about a quarter of the agents within half the radius
    assert 0.2 < float((distance < r_max / 2).double().mean()) < 0.3


def test_ring_spawn_on_radius_facing_centre():
    state, x, y, distance, r_max = _spawn_distances("ring", 5, 1000, 64, 48, 0.35)
    assert float((distance - r_max).abs().max()) < 2.0**-15
    circle = torch.tensor(exact.unit_circle(), dtype=torch.float64) / 2**30
    facing = circle[state.heading[0].long()]
    cosine = -(facing[:, 0] * x + facing[:, 1] * y) / distance  # heading . (centre - position)
    assert float(cosine.min()) > 1 - 1e-6


def test_center_spawn_all_at_centre():
    state = spawn([6], 100, 13, 11, "center")
    assert state.position[0, 0].unique().tolist() == [13 * ONE_CELL // 2]
    assert state.position[0, 1].unique().tolist() == [11 * ONE_CELL // 2]


def test_unknown_spawn_rejected():
    with pytest.raises(ValueError, match="random, disk, ring, center"):
        spawn([1], 10, 7, 5, "spiral")


def test_image_spawn_follows_the_weights_exactly():
    weights = torch.zeros((6, 9), dtype=torch.int64)
    weights[1, 2], weights[4, 7] = 1, 3  # only two cells, one three times the other
    state = spawn([4], 4000, 9, 6, "image", density=weights)
    cells = ((state.position[0, 1] >> FRAC) * 9 + (state.position[0, 0] >> FRAC)).tolist()
    assert set(cells) == {1 * 9 + 2, 4 * 9 + 7}
    share = cells.count(4 * 9 + 7) / len(cells)
    assert 0.72 < share < 0.78
    with pytest.raises(ValueError, match="no cell"):
        spawn([4], 10, 9, 6, "image", density=torch.zeros((6, 9), dtype=torch.int64))
