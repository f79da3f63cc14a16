"""Run statistics: a few numbers per step that describe a trail map, computed on its device.

`trail_statistics` turns trail maps [B, H, W] into one row of numbers each (STAT_COLUMNS);
`StatsRecorder` is the per-step hook `physarum render --stats` hands to the runner: it keeps the
rows on the device (no host sync per step) and writes them as CSV at the end. The definitions are
in docs/sensitivity.md section 4:

- mean and max of the trail;
- coverage: the share of cells above COVERAGE_FRACTION of the map's own maximum (0 for an empty
  map), so that it does not depend on the deposit scale;
- entropy: the Shannon entropy in nats of the trail read as a distribution over cells,
  p = T / sum(T); ln(cells) for a uniform map, 0 for one hot cell; entropy_ratio divides it by
  ln(cells) so that canvases of different sizes compare;
- the dominant wavelength: the power spectrum of T - mean(T), summed over rings one cycle per
  short side wide (the 1-D spectrum E(r)); around the ring of largest power (the constant term left out),
  the power-weighted mean ring r within a quarter of the peak's radius (at least one ring) on
  either side, r cycles per short side S, is a wavelength of S / r pixels, or 1 / r of the short
  side.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from ..base.files import PartialFile, stage_csv

COVERAGE_FRACTION = 0.01
STAT_COLUMNS = ("mean", "max", "coverage", "entropy", "entropy_ratio", "wavelength_px", "wavelength_fraction")


class SpectrumRings:
    """The rings of the radially averaged power spectrum of one canvas size, built once.

    The half spectrum of rfft2 holds frequencies fx = i / W (i <= W / 2) and fy = j / H (j in
    (-H/2, H/2]) cycles per pixel; each lies in ring round(S * sqrt(fx^2 + fy^2)), S the short
    side. Ring sums are segment sums of the power sorted by ring (a cumulative sum: the same
    order every time, no atomics, deterministic on every device).
    """

    def __init__(self, height: int, width: int, device: torch.device):
        short = min(height, width)
        fy = torch.fft.fftfreq(height, dtype=torch.float64, device=device)[:, None]
        fx = torch.fft.rfftfreq(width, dtype=torch.float64, device=device)[None, :]
        ring = torch.round(short * torch.sqrt(fx * fx + fy * fy)).to(torch.int64).reshape(-1)
        self.order = torch.argsort(ring, stable=True)
        counts = torch.bincount(ring)
        self.ends = torch.cumsum(counts, 0) - 1  # last sorted position of each ring
        self.short = short

    def dominant(self, trail: torch.Tensor) -> torch.Tensor:
        """[B] float64 dominant wavelength in pixels of trail maps [B, H, W] (NaN if flat)."""
        centred = trail - trail.mean(dim=(-2, -1), keepdim=True)
        power = torch.view_as_real(torch.fft.rfft2(centred)).square().sum(dim=-1)
        power = power.reshape(trail.shape[0], -1)[:, self.order].to(torch.float64)
        total = torch.cumsum(power, dim=1)[:, self.ends]
        ring_sum = torch.diff(total, dim=1, prepend=torch.zeros_like(total[:, :1]))
        # The ring of largest *total* power: the 1-D spectrum E(r), the radially averaged power
        # times the ring's circumference. The average alone favours the few frequencies of the
        # innermost rings: a faint large-scale shading of the network (1 to 2 cycles per side)
        # can outweigh the cells' own ring (docs/benchmarks.md, "Measurements behind the code:
        # the render pipeline").
        ring_sum[:, 0] = 0.0  # the constant term, zero after centring, never counts
        peak = torch.argmax(ring_sum, dim=1)
        flat = ring_sum.amax(dim=1) <= 0
        # The peak ring alone jumps between neighbours from step to step on broad spectra; the
        # power-weighted mean ring within a quarter of the peak on either side is steady, and for
        # a single sinusoid it is the peak ring itself.
        rings = torch.arange(ring_sum.shape[1], device=ring_sum.device, dtype=torch.float64)
        reach = torch.clamp(torch.round(peak.to(torch.float64) / 4), min=1.0)[:, None]
        near = (rings[None, :] - peak[:, None]).abs() <= reach
        weight = torch.where(near, ring_sum.clamp(min=0), 0.0)
        ring = (weight * rings).sum(dim=1) / weight.sum(dim=1).clamp(min=1e-300)
        return torch.where(flat, torch.nan, self.short / ring)


def trail_statistics(trail: torch.Tensor, rings: SpectrumRings | None = None) -> torch.Tensor:
    """[B, len(STAT_COLUMNS)] float64 statistics of float32 trail maps [B, H, W], on their device.

    Sums are accumulated in float64. The entropy is ln(S) - sum(T ln T) / S with S = sum(T),
    which is -sum(p ln p) for p = T / S without dividing every cell.
    """
    batch, height, width = trail.shape
    rings = rings or SpectrumRings(height, width, trail.device)
    values = trail.reshape(batch, -1)
    cells = values.shape[1]
    total = values.sum(dim=1, dtype=torch.float64)
    peak = values.amax(dim=1)
    covered = (values > COVERAGE_FRACTION * peak[:, None]).sum(dim=1, dtype=torch.float64)
    weighted = torch.special.xlogy(values, values).sum(dim=1, dtype=torch.float64)  # 0 ln 0 = 0
    safe_total = torch.where(total > 0, total, 1.0)
    # clamped: float32 rounding of T ln T leaves about 1e-7 of noise around an exact 0
    entropy = torch.where(total > 0, torch.log(safe_total) - weighted / safe_total, 0.0).clamp(min=0)
    wavelength = rings.dominant(trail)
    return torch.stack(
        [
            total / cells,
            peak.to(torch.float64),
            covered / cells,
            entropy,
            entropy / math.log(cells),
            wavelength,
            wavelength / rings.short,
        ],
        dim=1,
    )


class StatsRecorder:
    """Per-step statistics of simulation 0 of a render, as an `on_step` hook for the runner.

    Rows stay on the simulation's device until `write`, so recording costs no host sync.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.rows: list[torch.Tensor] = []
        self.rings: SpectrumRings | None = None

    def __call__(self, simulation) -> None:
        trail = simulation.trail[:1]
        if self.rings is None:
            self.rings = SpectrumRings(trail.shape[1], trail.shape[2], trail.device)
        self.rows.append(trail_statistics(trail, self.rings)[0])

    def stage(self) -> PartialFile:
        """The CSV (step, then STAT_COLUMNS; step 1 is the state after the first step) written
        under its temporary name, for the runner to commit with the render's other files."""
        table = torch.stack(self.rows).cpu().tolist() if self.rows else []
        rows = ((step, *(f"{value:.9g}" for value in row)) for step, row in enumerate(table, start=1))
        return stage_csv(self.path, ("step", *STAT_COLUMNS), rows)

    def write(self) -> Path:
        """The CSV written and in place (outside a render)."""
        self.stage().commit()
        return self.path

    def staged(self) -> dict[str, PartialFile]:
        """RenderOptions.extra_files: the CSV as the output 'stats'."""
        return {"stats": self.stage()}
