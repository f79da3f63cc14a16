"""Divergence metrics of each twin from its base, per step: trail L1, trail correlation, agent
distance, and the decorrelated levels they are measured against (docs/sensitivity.md section 2.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...kernels.api import FRAC_BITS, ONE
from .twins import Twin

METRICS = ("trail_l1", "trail_correlation", "agent_distance_px")


def divergence(trail: torch.Tensor, position: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each twin against its base, for a batch laid out as P groups of [base, twin, twin, ...].

    trail [P * group, H, W] float32, position [P * group, 2, N] int32 16.16.
    Returns ([P, group - 1, 3] float64: L1 / sum(base), Pearson correlation, mean torus distance
    of same-index agents in pixels) and ([P, 2] float64: the decorrelated levels of L1 and agent
    distance, the base against itself shifted by half the canvas and half the agents).
    """
    _, height, width = trail.shape
    trail = trail.reshape(-1, group, height, width)
    base, twins = trail[:, :1], trail[:, 1:]
    base_total = base.sum(dim=(-2, -1), dtype=torch.float64)
    l1 = _relative_l1(twins, base, base_total)
    correlation = _correlation(base.to(torch.float64), twins.to(torch.float64))
    position = position.reshape(-1, group, 2, position.shape[-1])
    sizes = torch.tensor([width, height], device=position.device)[:, None] << FRAC_BITS
    distance = _torus_distance(position[:, 1:], position[:, :1], sizes)
    shifted = base.roll((height // 2, width // 2), dims=(-2, -1))
    decorrelated_l1 = _relative_l1(shifted, base, base_total)
    agents = position.shape[-1]
    other = position[:, :1].roll(agents // 2, dims=-1)
    decorrelated_distance = _torus_distance(other, position[:, :1], sizes)
    return (
        torch.stack([l1, correlation, distance], dim=-1),
        torch.cat([decorrelated_l1, decorrelated_distance], dim=1),
    )


def _relative_l1(maps: torch.Tensor, base: torch.Tensor, base_total: torch.Tensor) -> torch.Tensor:
    """sum |maps - base| over the last two dims (summed in float64) over the base's own sum."""
    return (maps - base).abs().sum(dim=(-2, -1), dtype=torch.float64) / base_total


def _correlation(base: torch.Tensor, twins: torch.Tensor) -> torch.Tensor:
    """Pearson correlation over the last two dims, as 1 - mean((z_base - z_twin)^2) / 2 with z
    the standardised maps: exact to float64 rounding even for nearly identical maps."""

    def standardised(x):
        centred = x - x.mean(dim=(-2, -1), keepdim=True)
        spread = centred.square().mean(dim=(-2, -1), keepdim=True).sqrt()
        return centred / torch.where(spread > 0, spread, torch.nan)

    return 1 - (standardised(base) - standardised(twins)).square().mean(dim=(-2, -1)) / 2


def _torus_distance(a: torch.Tensor, b: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Mean over agents of the torus distance in pixels between 16.16 positions [..., 2, N]."""
    delta = torch.remainder((a - b).to(torch.int64), sizes)
    delta = torch.minimum(delta, sizes - delta).to(torch.float64) / ONE
    return torch.hypot(delta[..., 0, :], delta[..., 1, :]).mean(dim=-1)


@dataclass
class TwinSeries:
    """Per-step divergence of every twin of every point of a run.

    steps: [S + 1] the step numbers, from the perturbed state (step `at`) on.
    metrics: [P, K, S + 1, 3] float64, METRICS of each twin against its base at each step.
    decorrelated: [P, S + 1, 2] float64, the decorrelated L1 and agent distance of each base.
    twins: [P][K] the perturbations.
    """

    steps: np.ndarray
    metrics: np.ndarray
    decorrelated: np.ndarray
    twins: list[list[Twin]]
