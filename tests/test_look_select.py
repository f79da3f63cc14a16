"""Exact order statistics (render/look/select.py): the element torch.kthvalue finds, on every
kind of trail, size and rank, by both paths (numpy's partition on the CPU, topk elsewhere)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from physarum.render.look import select
from physarum.render.look.colour import Colourist, auto_high
from physarum.render.look.select import kth_values, quantile_rank
from physarum.render.preset import Palette


def trails(seed: int, cells: int) -> dict[str, torch.Tensor]:
    """Trails of `cells` float32 values >= 0 of the shapes a real one takes, and its extremes."""
    g = torch.Generator().manual_seed(seed)
    uniform = torch.rand(cells, generator=g)
    sparse = torch.where(torch.rand(cells, generator=g) < 0.97, 0.0, uniform * 30)
    exponent = torch.randint(-149, 128, (cells,), generator=g).to(torch.float64)
    huge = (uniform.to(torch.float64) * torch.pow(2.0, exponent)).clamp(max=3.0e38).to(torch.float32)
    ties = torch.randint(0, 4, (cells,), generator=g).to(torch.float32) * 0.25
    return {
        "random": uniform * 40,
        "constant": torch.full((cells,), 2.5),
        "zeros": torch.zeros(cells),
        "sparse": sparse,
        "huge range": huge,  # denormals to 3e38
        "ties": ties,
        "filaments": uniform**8 * 1e3,
    }


def ranks_of(cells: int) -> list[int]:
    quantiles = (1e-9, 0.01, 0.25, 0.5, 0.5 + 1e-9, 0.9, 0.99, 0.999, 1.0)
    return sorted({1, cells, *(quantile_rank(cells, q) for q in quantiles)})


@pytest.mark.parametrize("cells", [1, 2, 3, 7, 64, 1000, 4097, 65_537])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_rank_is_the_element_kthvalue_finds(cells, seed):
    for name, trail in trails(seed, cells).items():
        ks = ranks_of(cells)
        expected = [torch.kthvalue(trail, k).values.item() for k in ks]
        found = kth_values(trail, ks)
        assert found.dtype == torch.float32 and found.shape == (len(ks),)
        assert found.view(torch.int32).tolist() == torch.tensor(expected).view(torch.int32).tolist(), name
        topk = torch.stack([select._topk(trail, k) for k in ks])  # the GPU path, run on the CPU
        assert topk.view(torch.int32).tolist() == found.view(torch.int32).tolist(), name


def test_a_two_dimensional_map_and_a_non_contiguous_view():
    trail = torch.rand(48, 40, generator=torch.Generator().manual_seed(3)) * 7
    for view in (trail, trail.t(), trail[::2, 1::3]):
        k = quantile_rank(view.numel(), 0.99)
        assert kth_values(view, [k]).item() == torch.kthvalue(view.reshape(-1), k).values.item()


def test_auto_high_keeps_its_rank():
    """auto_high takes rank ceil(q * cells), clamped to 1 .. cells, as it did with kthvalue."""
    trail = torch.arange(1000, dtype=torch.float32).reshape(20, 50)
    for q, value in ((0.9, 899.0), (0.0001, 0.0), (0.99901, 999.0), (1.0, 999.0), (0.5, 499.0)):
        assert auto_high(trail, q).item() == value
    assert quantile_rank(1000, 0.9) == math.ceil(0.9 * 1000) == 900


def test_a_rank_outside_the_map_is_refused():
    with pytest.raises(ValueError, match="ranks must be 1 .. 4"):
        kth_values(torch.zeros(2, 2), [5])
    with pytest.raises(ValueError, match="ranks must be"):
        kth_values(torch.zeros(4), [0])


def test_several_ranks_at_once_agree_with_numpy():
    trail = torch.rand(5000, generator=torch.Generator().manual_seed(4)) ** 3
    ks = [1, 17, 2500, 4999, 5000]
    assert kth_values(trail, ks).tolist() == np.sort(trail.numpy())[[k - 1 for k in ks]].tolist()


@pytest.mark.gpu
def test_cuda_finds_the_same_bits_as_the_cpu():
    """topk on the GPU and np.partition on the CPU: the same element, and the same index frames."""
    palette = Palette(names=["gray"], gamma=0.7, levels={"high": "auto", "quantile": 0.99})
    for seed, cells in ((0, 1), (1, 999), (2, 65_537), (3, 2160 * 3840)):
        for name, trail in trails(seed, cells).items():
            ks = ranks_of(cells)
            on_gpu = kth_values(trail.cuda(), ks).cpu()
            assert on_gpu.view(torch.int32).tolist() == kth_values(trail, ks).view(torch.int32).tolist(), name
            if cells > 1:
                square = trail.reshape(-1, 1) if cells % 2 else trail.reshape(2, -1)
                cpu, gpu = (
                    Colourist(palette).index_frame(square),
                    Colourist(palette).index_frame(square.cuda()),
                )
                assert torch.equal(cpu, gpu.cpu()), name
