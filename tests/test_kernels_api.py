"""The contract's types (kernels/api.py)."""

from __future__ import annotations

import pytest
import torch

from physarum.kernels import api


def test_world_rejects_bad_shapes():
    with pytest.raises(ValueError, match="boundary"):
        api.World(boundary="torus")
    with pytest.raises(ValueError, match="species"):
        api.World(species=5, mix=torch.zeros(5, 5))
    with pytest.raises(ValueError, match="mix"):
        api.World(species=2)
    with pytest.raises(ValueError, match="whole simulations"):
        api.World(species=2, mix=torch.zeros(3, 2)).simulations(3)
