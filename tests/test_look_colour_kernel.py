"""The palette indices kernel (render/look/colour_kernel.py) against torch.bucketize, byte for
byte: in Triton's CPU interpreter, and on CUDA through Colourist.index_frame (gpu)."""

from __future__ import annotations

import pytest
import torch

from physarum.render.look.colour import Colourist
from physarum.render.preset import Palette


def _bounds(seed: int) -> torch.Tensor:
    """255 ascending bounds with ties, as the Colourist's (high - low) * levels + low may have."""
    g = torch.Generator().manual_seed(seed)
    steps = torch.rand(255, generator=g) * (torch.rand(255, generator=g) < 0.8)
    return torch.cumsum(steps, 0) - 3.0


def _values(bounds: torch.Tensor, cells: int, seed: int) -> torch.Tensor:
    """Cells on both sides of every bound, on the bounds themselves, far outside, infinities and
    both zeros."""
    g = torch.Generator().manual_seed(seed)
    spread = (
        torch.rand(cells, generator=g) * (float(bounds[-1]) - float(bounds[0]) + 4) + float(bounds[0]) - 2
    )
    exact = bounds[torch.randint(0, 255, (cells // 4,), generator=g)]
    special = torch.tensor([float("inf"), float("-inf"), 0.0, -0.0, 1e30, -1e30])
    return torch.cat([spread, exact, torch.nextafter(exact, exact + 1), special])


@pytest.mark.interpreter(cpu=True)
@pytest.mark.parametrize("seed", [0, 1])
def test_the_kernel_gives_bucketize_s_indices_in_the_interpreter(seed):
    from physarum.render.look.colour_kernel import palette_indices

    bounds = _bounds(seed)
    values = _values(bounds, 3000, seed)
    expected = torch.bucketize(values, bounds, right=True).to(torch.uint8)
    assert torch.equal(palette_indices(values, bounds), expected)
    assert len(torch.unique(expected)) > 100  # most of the 256 indices are reached
    square = values[: 40 * 50].reshape(40, 50).t()  # a non-contiguous map keeps its shape
    expected = torch.bucketize(square.contiguous(), bounds, right=True).to(torch.uint8)
    assert torch.equal(palette_indices(square, bounds), expected)


@pytest.mark.interpreter(cpu=True)
def test_the_kernel_refuses_bounds_of_another_length():
    from physarum.render.look.colour_kernel import palette_indices

    with pytest.raises(ValueError, match="255 bounds"):
        palette_indices(torch.zeros(4), torch.zeros(10))


@pytest.mark.gpu
def test_index_frames_on_cuda_equal_the_cpu_s():
    """Colourist.index_frame takes the kernel on CUDA: the same index frames as torch on the CPU,
    fixed and auto levels."""
    g = torch.Generator().manual_seed(7)
    trail = (-torch.log1p(-torch.rand(600, 700, generator=g) * 0.999)) ** 3
    for levels in ({"high": "auto", "quantile": 0.99}, {"low": 0.1, "high": 5.0}):
        palette = Palette(names=["magma"], gamma=0.7, levels=levels)
        cpu = Colourist(palette).index_frame(trail)
        assert torch.equal(Colourist(palette).index_frame(trail.cuda()).cpu(), cpu)
