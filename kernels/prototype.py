"""The seed-style eager PyTorch prototype: the speed baseline `physarum bench` compares against.

Float positions and headings, torch.rand for turns, grid_sample for the three sensors,
scatter_add for deposits and conv2d for the 3x3 mean, with wrap-around everywhere and
accumulating deposits. It is NOT exact (float math, torch.rand) and is not a render backend.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .api import FRAC_BITS, HEADINGS, ModelParams, State


class PrototypeSimulation:
    """B simulations of one canvas as the seed prototype wrote them (one parameter set each)."""

    name = "prototype"
    dims = 2

    def __init__(self, state: State, params: list[ModelParams]):
        device = state.trail.device
        self.trail = state.trail.clone().unsqueeze(1)  # [B, 1, H, W]
        self.position = state.position.to(torch.float32).transpose(1, 2) / (1 << FRAC_BITS)  # [B, N, 2]
        self.heading = state.heading.to(torch.float32) * (2 * math.pi / HEADINGS)  # [B, N]

        def column(values):
            return torch.tensor(values, dtype=torch.float32, device=device)[:, None]

        self.sensor_angle = column([math.radians(p.sensor_angle) for p in params])
        self.sensor_distance = column([p.sensor_distance for p in params])
        self.turn_angle = column([math.radians(p.turn_angle) for p in params])
        self.step_size = column([p.step_size for p in params])
        self.deposit = column([p.deposit for p in params])[..., None, None]
        self.diffuse = column([p.diffuse for p in params])[..., None, None]
        self.decay = column([p.decay for p in params])[..., None, None]
        self.kernel = torch.full((1, 1, 3, 3), 1.0 / 9.0, device=device)

    def _sense(self, angle: torch.Tensor) -> torch.Tensor:
        _, _, height, width = self.trail.shape
        x = torch.remainder(self.position[..., 0] + self.sensor_distance * torch.cos(angle), width)
        y = torch.remainder(self.position[..., 1] + self.sensor_distance * torch.sin(angle), height)
        grid = torch.stack([x / width * 2 - 1, y / height * 2 - 1], dim=-1)[:, :, None, :]
        return F.grid_sample(self.trail, grid, mode="nearest", align_corners=False)[:, 0, :, 0]

    def _step(self) -> None:
        batch, _, height, width = self.trail.shape
        forward = self._sense(self.heading)
        left = self._sense(self.heading - self.sensor_angle)
        right = self._sense(self.heading + self.sensor_angle)
        random_sign = torch.where(torch.rand_like(forward) < 0.5, -1.0, 1.0)
        turn = torch.where(left > right, -1.0, torch.where(right > left, 1.0, 0.0))
        turn = torch.where((forward < left) & (forward < right), random_sign, turn)
        turn = torch.where((forward > left) & (forward > right), 0.0, turn)
        self.heading = self.heading + turn * self.turn_angle
        step = (
            torch.stack([torch.cos(self.heading), torch.sin(self.heading)], dim=-1)
            * self.step_size[..., None]
        )
        self.position = torch.remainder(
            self.position + step, torch.tensor([width, height], device=step.device)
        )
        cell = self.position.long()
        index = (cell[..., 1] % height) * width + cell[..., 0] % width
        flat = self.trail.view(batch, -1)
        flat.scatter_add_(1, index, self.deposit[:, :, 0, 0].expand_as(index.float()))
        blurred = F.conv2d(F.pad(self.trail, (1, 1, 1, 1), mode="circular"), self.kernel)
        self.trail = (1 - self.decay) * ((1 - self.diffuse) * self.trail + self.diffuse * blurred)

    def advance(self, steps: int) -> None:
        for _ in range(steps):
            self._step()

    def eager_step(self) -> None:
        """One step (the prototype has no graphs): what the bench counts launches over."""
        self._step()
