"""The contract's types (kernels/api.py)."""

from __future__ import annotations

import pytest
import torch

from physarum.kernels import api
from physarum.kernels.spawn import spawn


def test_world_rejects_bad_shapes():
    with pytest.raises(ValueError, match="boundary"):
        api.World(boundary="torus")
    with pytest.raises(ValueError, match="species"):
        api.World(species=5, mix=torch.zeros(5, 5))
    with pytest.raises(ValueError, match="mix"):
        api.World(species=2)
    with pytest.raises(ValueError, match="whole simulations"):
        api.World(species=2, mix=torch.zeros(3, 2)).simulations(3)


def test_state_concat_stacks_the_simulations_in_order():
    parts = [spawn([seed], 50, 13, 11, "random") for seed in (1, 2, 3)]
    parts[1].trail += 0.5
    batch = api.State.concat(parts)
    assert batch.batch == 3 and batch.agents == 50 and (batch.height, batch.width) == (11, 13)
    for b, part in enumerate(parts):
        assert torch.equal(batch.position[b], part.position[0])
        assert torch.equal(batch.heading[b], part.heading[0])
        assert torch.equal(batch.trail[b], part.trail[0])
    assert int(batch.step) == 0 and batch.step.shape == ()
    assert torch.equal(api.State.concat(parts[:1]).position, parts[0].position)
    later = parts[2].clone()
    later.step = later.step + 1
    with pytest.raises(ValueError, match="different steps"):
        api.State.concat([parts[0], later])
    with pytest.raises(ValueError, match="no states"):
        api.State.concat([])
