"""Per-frame metrics of a render's trail: a few numbers per frame and simulation, computed on the
simulation's device (`render --metrics` writes them as CSV; `physarum explore` describes each
candidate by them).

Each simulation's trail is its species' maps summed, T [H, W]; the metrics of a frame are
(METRIC_COLUMNS):

- mass: the mean of T (trail per cell);
- coverage: the share of cells above COVERAGE_FRACTION of T's maximum (0 for an empty map);
- veins: the share of cells above VEIN_FACTOR times T's mean (bright veins against the haze; 0
  for an empty map);
- travel: sum |T - T'| / sum T, T' the previous frame's map: how much of the trail moved since the
  last frame (NaN on the first frame, which has none before it);
- band_1 .. band_4: the share of the power spectrum of T - mean(T) in rings of BAND_EDGES cycles
  per short side (large shapes to fine grain; each rfft2 bin counted twice where its conjugate
  is not stored); 0 for a flat map. A 3D world's volume counts cell by cell, its bands are those
  of its projection along the depth.

Sums and the spectrum are float64 on the device. The numbers describe pictures; they decide no
output byte, and their last bits may differ between devices (summation order, the FFT's).
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..base.files import PartialFile, stage_csv

COVERAGE_FRACTION = 0.01
VEIN_FACTOR = 4.0
BAND_EDGES = (1, 4, 16, 64)  # rings [1, 4), [4, 16), [16, 64), [64, oo) cycles per short side
METRIC_COLUMNS = ("mass", "coverage", "veins", "travel", "band_1", "band_2", "band_3", "band_4")


def band_weights(height: int, width: int, device: torch.device) -> torch.Tensor:
    """[H * (W // 2 + 1), len(BAND_EDGES)] float64: each rfft2 bin's weight in each band (1 or 2:
    the columns whose conjugates rfft2 leaves out count twice; the constant term is in none)."""
    short = min(height, width)
    fy = torch.fft.fftfreq(height, dtype=torch.float64, device=device)[:, None]
    fx = torch.fft.rfftfreq(width, dtype=torch.float64, device=device)[None, :]
    ring = torch.round(short * torch.sqrt(fx * fx + fy * fy)).expand(height, fx.shape[1])
    twice = torch.ones_like(ring)
    last = width // 2 if width % 2 == 0 else None
    twice[:, 1:last] = 2.0
    edges = [*BAND_EDGES, float("inf")]
    bands = [(ring >= low) & (ring < high) for low, high in zip(edges, edges[1:])]
    return torch.stack([torch.where(band, twice, 0.0) for band in bands], dim=-1).reshape(-1, len(bands))


def combined_trail(trail: torch.Tensor, species: int) -> torch.Tensor:
    """[B, *grid] float64: each simulation's species maps (groups b * S .. b * S + S - 1) summed."""
    groups, *grid = trail.shape
    return trail.reshape(groups // species, species, *grid).sum(dim=1, dtype=torch.float64)


def spectrum_plane(maps: torch.Tensor) -> torch.Tensor:
    """[B, H, W]: the maps themselves, or a 3D world's [B, Z, H, W] summed over its depth (the
    spectral bands of a volume are those of its projection)."""
    return maps if maps.dim() == 3 else maps.sum(dim=1)


def frame_metrics(maps: torch.Tensor, previous: torch.Tensor | None, weights: torch.Tensor) -> torch.Tensor:
    """[B, len(METRIC_COLUMNS)] float64 metrics of maps [B, H, W] (or a volume's [B, Z, H, W])
    float64 (module docstring); previous: the previous frame's maps, or None (travel NaN)."""
    batch = maps.shape[0]
    values = maps.reshape(batch, -1)
    total = values.sum(dim=1)
    mean = total / values.shape[1]
    peak = values.amax(dim=1)
    coverage = (values > COVERAGE_FRACTION * peak[:, None]).sum(dim=1) / values.shape[1]
    veins = (values > VEIN_FACTOR * mean[:, None]).sum(dim=1) / values.shape[1]
    coverage = torch.where(peak > 0, coverage, 0.0)
    veins = torch.where(peak > 0, veins, 0.0)
    if previous is None:
        travel = torch.full_like(total, torch.nan)
    else:
        moved = (maps - previous).abs().reshape(batch, -1).sum(dim=1)
        travel = moved / torch.where(total > 0, total, 1.0)
    plane = spectrum_plane(maps)
    # float64 throughout: a float32 spectrum differs between devices in its 7th digit, which
    # explore's descriptors (6 digits) would see
    centred = plane - plane.mean(dim=(-2, -1), keepdim=True)
    power = torch.view_as_real(torch.fft.rfft2(centred)).square().sum(dim=-1).reshape(batch, -1)
    bands = power @ weights
    all_power = bands.sum(dim=1, keepdim=True)
    bands = torch.where(all_power > 0, bands / torch.where(all_power > 0, all_power, 1.0), 0.0)
    return torch.cat([torch.stack([mean, coverage, veins, travel], dim=1), bands], dim=1)


class FrameMetrics:
    """The per-frame metrics of every simulation of a batch, as the runner's on_frame hook.

    Rows stay on the device until `table` (no host sync per frame): table() is [F, B, M] float64
    and steps the step of each frame.
    """

    def __init__(self, species: int = 1):
        self.species = species
        self.rows: list[torch.Tensor] = []
        self.steps: list[int] = []
        self.previous: torch.Tensor | None = None
        self.weights: torch.Tensor | None = None

    def __call__(self, simulation, frame: int, step: int) -> None:
        maps = combined_trail(simulation.trail, self.species)
        if self.weights is None:
            self.weights = band_weights(maps.shape[-2], maps.shape[-1], maps.device)
        self.rows.append(frame_metrics(maps, self.previous, self.weights))
        self.steps.append(step)
        self.previous = maps

    def table(self) -> torch.Tensor:
        """[F, B, M] float64 on the host (F = 0: an empty [0, 0, M])."""
        if not self.rows:
            return torch.zeros((0, 0, len(METRIC_COLUMNS)), dtype=torch.float64)
        return torch.stack(self.rows).cpu()


class MetricsCsv(FrameMetrics):
    """`render --metrics`: simulation 0's per-frame metrics as a CSV (frame, step, METRIC_COLUMNS),
    staged for the runner to commit with the render's other files."""

    def __init__(self, path: Path, species: int = 1):
        super().__init__(species)
        self.path = Path(path)
        self.frames: list[int] = []

    def stage(self) -> PartialFile:
        table = self.table()
        rows = (
            (frame, step, *(f"{value:.9g}" for value in table[i, 0].tolist()))
            for i, (frame, step) in enumerate(zip(self.frames, self.steps))
        )
        return stage_csv(self.path, ("frame", "step", *METRIC_COLUMNS), rows)

    def __call__(self, simulation, frame: int, step: int) -> None:
        self.frames.append(frame)
        super().__call__(simulation, frame, step)

    def staged(self) -> dict[str, PartialFile]:
        """RenderOptions.extra_files: the CSV as the output 'metrics'."""
        return {"metrics": self.stage()}
