"""Colouring on the device: trail -> 8-bit palette index through levels and gamma.

The map index = round(255 * ((T - low) / (high - low)) ** gamma) is never evaluated per cell:
the gamma curve is tabulated once on the host, each frame's 255 thresholds follow from it in
plain float32 operations, and each cell's index is the number of thresholds at or below it.
Comparisons are exact, so index frames are identical on every backend and device (a per-cell
pow on a GPU and on a CPU is not).

Every colourist is here: a trail's (Colourist: palettes, alternation, blends), several species'
(SpeciesColourist: integer blends of their ramps) and the render layers' (HeadingColourist,
MixColourist, on the maps render/look/layers.py makes); make_colourist chooses a preset's.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import torch

# the GIF's sizes and product levels (render/formats/gif_file.py), as the look's modules name them
from ..formats.gif_file import PRODUCT_LEVELS
from ..formats.gif_file import preview_size as preview_size
from ..preset import DEFAULT_SPECIES_COLOURS, Palette, Preset
from ..preset.look_section import Look
from ..preset.palettes import parse_hex
from ..sim.course import Course
from .hdr import HdrLook
from .layers import hue_table, mix_weight
from .palette import palette_table
from .select import kth_values, quantile_rank


@functools.cache
def has_triton() -> bool:
    """Whether Triton is installed: the look's kernels (colour_kernel.py, volume_kernel.py) can
    run on a CUDA device."""
    return importlib.util.find_spec("triton") is not None


def gamma_levels(gamma: float) -> np.ndarray:
    """[255] float32, ascending: where in [0, 1] of the level range the index reaches 1 .. 255.

    Computed once, on the host, in float64 (pow is not exact across devices; this runs once).
    """
    level = (np.arange(1, 256, dtype=np.float64) - 0.5) / 255.0
    return (level ** (1.0 / gamma)).astype(np.float32)


def auto_high(trail: torch.Tensor, quantile: float) -> torch.Tensor:
    """[] float32: the trail value at `quantile`, the element of rank ceil(quantile * cells) that
    torch.kthvalue finds, found exactly and faster by select.kth_values."""
    return kth_values(trail, [quantile_rank(trail.numel(), quantile)])[0]


def blend_table(before: np.ndarray, after: np.ndarray, k: int, steps: int) -> np.ndarray:
    """[256, 3] uint8: step k of `steps` (1 .. steps) of a cross-fade from palette `before` to
    `after`, in integers: (before * (steps + 1 - k) + after * k + (steps + 1) // 2) // (steps + 1),
    each entry rounded to nearest (halves up). Exact, so a GIF's local table and an RGB frame
    (table[index]) agree on every device."""
    weight = steps + 1
    mixed = before.astype(np.int64) * (weight - k) + after.astype(np.int64) * k + weight // 2
    return (mixed // weight).astype(np.uint8)


class Colourist:
    """Turns one simulation's trail [H, W] into index frames and knows each frame's palette.

    Everything per frame stays on the device with no host synchronisation: the thresholds are
    low + (high - low) * level in separate float32 operations (each rounded the same way on every
    device), and a cell's index is the number of thresholds at or below it.
    """

    def __init__(
        self, palette: Palette, look: Look | None = None, seed: int = 0, frame_step=int, end: int = 0
    ):
        self.palette = palette  # look: render/look/hdr.py, its schedules valued at frame_step(frame)
        self.hdr = None if look is None else HdrLook(look, palette.gamma, seed, frame_step, end)
        self.tables = [palette_table(entry, palette.space) for entry in palette.names]
        self._levels = torch.from_numpy(gamma_levels(palette.gamma))
        self._device_tables: dict = {}
        self._blends: dict[tuple[int, int], np.ndarray] = {}
        self._device_blends: dict = {}

    def _on(self, device: torch.device) -> dict[str, torch.Tensor]:
        """The colouring's constants on `device`, copied there once: a host-to-device copy of a
        scalar every frame waits for the GPU, and a batch colours dozens of maps a frame."""
        if device not in self._device_tables:
            levels = self.palette.levels
            high = 0.0 if levels.high == "auto" else levels.high  # auto: found in every frame
            self._device_tables[device] = {
                "levels": self._levels.to(device),
                "tables": torch.from_numpy(np.stack(self.tables)).to(device),
                "low": torch.tensor(levels.low, dtype=torch.float32).to(device),
                "high": torch.tensor(high, dtype=torch.float32).to(device),
            }
        return self._device_tables[device]

    def bounds(self, trail: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(low, high), [] float32 on the trail's device, high > low: the level range of this
        trail (palette.levels, auto high, the look's adaptive black point)."""
        constants = self._on(trail.device)
        low = constants["low"]
        if self.hdr is not None and self.hdr.look.black is not None:
            low = torch.maximum(low, auto_high(trail, self.hdr.look.black))  # adaptive black point
        if self.palette.levels.high == "auto":
            high = auto_high(trail, self.palette.levels.quantile)
            high = torch.where(high > low, high, trail.max())
        else:
            high = constants["high"]
        return low, torch.where(high > low, high, low + 1.0)

    def index_frame(self, trail: torch.Tensor, frame: int = 0) -> torch.Tensor:
        """[H, W] uint8 palette indices, on the trail's device (frame: the look's grain)."""
        low, high = self.bounds(trail)
        if self.hdr is not None:
            return self.hdr.index(trail, low, high, frame)
        bounds = (high - low) * self._on(trail.device)["levels"] + low
        if trail.device.type == "cuda" and has_triton():
            from .colour_kernel import palette_indices  # start-up: Triton, for a GPU render only

            return palette_indices(trail, bounds)  # the same bytes, without int64 indices
        return torch.bucketize(trail, bounds, right=True).to(torch.uint8)

    def palette_index(self, frame: int) -> int:
        """Which of the preset's palettes frame number `frame` is shown with (the one it
        starts from, in a blend)."""
        return (frame // self.palette.every) % len(self.tables)

    def blend_step(self, frame: int) -> int:
        """k of frame number `frame`: 0 outside a blend, 1 .. N (N = palette.blend) over the last
        N frames of its block of `every`, which cross-fade toward the next palette."""
        into = frame % self.palette.every - (self.palette.every - self.palette.blend)
        return into + 1 if into >= 0 else 0

    def table(self, frame: int) -> np.ndarray:
        """[256, 3] uint8 RGB palette of frame number `frame`: its palette, or in a blend the
        integer mix of it and the next one (blend_table)."""
        key = (self.palette_index(frame), self.blend_step(frame))
        if key[1] == 0:
            return self.tables[key[0]]
        if key not in self._blends:
            after = self.tables[(key[0] + 1) % len(self.tables)]
            self._blends[key] = blend_table(self.tables[key[0]], after, key[1], self.palette.blend)
        return self._blends[key]

    def rgb(self, index: torch.Tensor, frame: int) -> torch.Tensor:
        """[H, W, 3] uint8 RGB of an index frame, looked up on the index frame's device."""
        if self.blend_step(frame) == 0:
            tables = self._on(index.device)["tables"]
            return tables[self.palette_index(frame)][index.to(torch.int64)]
        key = (index.device, self.palette_index(frame), self.blend_step(frame))
        if key not in self._device_blends:
            self._device_blends[key] = torch.from_numpy(self.table(frame)).to(index.device)
        return self._device_blends[key][index.to(torch.int64)]

    def colour(
        self, trail: torch.Tensor, frame: int, rgb: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(index frame [H, W] uint8, RGB frame [H, W, 3] uint8 or None) of frame `frame`."""
        index = self.index_frame(trail) if self.hdr is None else self.index_frame(trail, frame)
        return index, (self.rgb(index, frame) if rgb else None)


# ---------------------------------------------------------------------------------------------
# Several species: one level per species map, blended in integers


def species_ramp(colour: str | None, palette) -> np.ndarray:
    """[256, 3] uint8: what level v of one species shows. A colour c: (v * c) // 255 per
    channel; a palette (name or hex stops): its entry v."""
    if palette is not None:
        return palette_table(palette)
    level = np.arange(256, dtype=np.int64)[:, None]
    return (level * np.array(parse_hex(colour), dtype=np.int64)[None, :] // 255).astype(np.uint8)


def species_ramps(preset: Preset) -> np.ndarray:
    """[S, 256, 3] uint8 ramps of a preset's species (default colours where none is given)."""
    ramps = []
    for s, species in enumerate(preset.species):
        colour = species.colour or (None if species.palette is not None else DEFAULT_SPECIES_COLOURS[s])
        ramps.append(species_ramp(colour, species.palette))
    return np.stack(ramps)


def blend(ramps: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """[..., 3] uint8: the saturating sum over species s of ramps[s][levels[s]] (host version)."""
    total = sum(ramps[s][levels[s]].astype(np.int32) for s in range(len(ramps)))
    return np.minimum(total, 255).astype(np.uint8)


def product_palette(ramps: np.ndarray) -> np.ndarray:
    """[256, 3] uint8 palette of a GIF of S species: index sum_s q_s * K^s shows the blend of
    each species at its representative level q_s * 255 // (K - 1) (unused entries black)."""
    species = len(ramps)
    k = PRODUCT_LEVELS[species]
    index = np.arange(k**species)
    quantised = np.stack([(index // k**s) % k for s in range(species)])
    table = np.zeros((256, 3), dtype=np.uint8)
    table[: k**species] = blend(ramps, quantised * 255 // (k - 1))
    return table


class SpeciesColourist:
    """Colours the S trail maps [S, H, W] of one simulation of a species preset.

    Each map gets a level 0..255 by Colourist.index_frame (the preset's levels and gamma, per
    map: with high: auto, each species' own quantile). RGB (MP4, PNG, frames) is the saturating
    integer sum of each species' ramp at its level. The GIF's index frame quantises each level to
    K = PRODUCT_LEVELS[S] steps, q_s = level_s * K // 256, index = sum_s q_s * K^s, shown with
    the fixed product_palette: exact, and the same palette on every frame.
    """

    def __init__(self, palette: Palette, ramps: np.ndarray):
        self.palette = palette
        self.levels = Colourist(palette)
        self.ramps = ramps
        self.species = len(ramps)
        self.k = PRODUCT_LEVELS[self.species]
        self.tables = [product_palette(ramps)]
        self._device: dict = {}

    def _on(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        if device not in self._device:
            weights = torch.tensor([self.k**s for s in range(self.species)], dtype=torch.int32)
            self._device[device] = (
                torch.from_numpy(self.ramps).to(device).to(torch.int32),
                weights.to(device)[:, None, None],
            )
        return self._device[device]

    def level_frames(self, maps: torch.Tensor) -> torch.Tensor:
        """[S, H, W] uint8 levels, one per species map."""
        return torch.stack([self.levels.index_frame(maps[s]) for s in range(self.species)])

    def index_frame(self, maps: torch.Tensor) -> torch.Tensor:
        return self.colour(maps, 0, rgb=False)[0]

    def colour(
        self, maps: torch.Tensor, frame: int, rgb: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(product index frame [H, W] uint8, blended RGB [H, W, 3] uint8 or None)."""
        ramps, weights = self._on(maps.device)
        levels = self.level_frames(maps).to(torch.int32)
        index = ((levels * self.k // 256) * weights).sum(0).to(torch.uint8)
        if not rgb:
            return index, None
        total = ramps[0][levels[0]]
        for s in range(1, self.species):
            total = total + ramps[s][levels[s]]
        return index, total.clamp_(max=255).to(torch.uint8)

    def palette_index(self, frame: int) -> int:
        return 0

    def table(self, frame: int) -> np.ndarray:
        return self.tables[0]


# ---------------------------------------------------------------------------------------------
# Render layers (render/look/layers.py makes their maps): the heading's hue wheel, the mix's blend


class HeadingColourist(Colourist):
    """Colours a heading layer's index map (float32 of 0 .. 252): the index is the map, shown with
    hue_table on every frame (a palette blend of it with itself is itself)."""

    def __init__(self, palette: Palette):
        super().__init__(palette)
        self.tables = [hue_table()]

    def index_frame(self, trail: torch.Tensor) -> torch.Tensor:
        return trail.to(torch.uint8)


class MixColourist(Colourist):
    """Colours a mix layer's maps [2, H, W] (trail, float32 density): each map's index by the
    preset's levels and gamma, then their integer blend (mix_weight)."""

    def __init__(self, palette: Palette):
        super().__init__(palette)
        self.weight = mix_weight(palette)

    def index_frame(self, trail: torch.Tensor) -> torch.Tensor:
        trail_index = super().index_frame(trail[0]).to(torch.int32)
        density_index = super().index_frame(trail[1]).to(torch.int32)
        mixed = trail_index * (256 - self.weight) + density_index * self.weight + 128
        return (mixed >> 8).to(torch.uint8)


def make_colourist(preset: Preset) -> Colourist | SpeciesColourist:
    """The colouring of a preset: its palettes, or with a species section each species' ramp
    (a heading or mix layer, render/look/layers.py: its colourist above)."""
    if preset.palette.layer in ("heading", "mix"):
        return {"heading": HeadingColourist, "mix": MixColourist}[preset.palette.layer](preset.palette)
    if preset.species is None:
        course = Course(preset.run)  # the step of each frame, where a look's schedules are valued
        return Colourist(preset.palette, preset.look, preset.seed, course.frame_end, preset.end_step)
    return SpeciesColourist(preset.palette, species_ramps(preset))


def downscale(
    index: torch.Tensor, size: tuple[int, int], resample: str = "nearest", digits: tuple[int, int] = (256, 1)
) -> torch.Tensor:
    """An index frame resampled to (width, height), in integers (exact on every device):
    `nearest` samples the pixel under each output pixel's centre; `area` (output.gif_resample)
    gives each output pixel the rounded mean of the indices it covers, weighted by the area covered
    (area_mean), digit by digit of an index written in base digits[0] with digits[1] digits (the
    species' product index, SpeciesColourist), so a species' level is averaged with its own."""
    height, width = index.shape
    out_w, out_h = size
    if (out_w, out_h) == (width, height):
        return index
    if resample == "area":
        base, count = digits
        wide = index.to(torch.int64)
        total = torch.zeros((out_h, out_w), dtype=torch.int64, device=index.device)
        for d in range(count):
            total += area_mean((wide // base**d) % base, size) * base**d
        return total.to(torch.uint8)
    columns = (torch.arange(out_w, device=index.device) * 2 + 1) * width // (2 * out_w)
    rows = (torch.arange(out_h, device=index.device) * 2 + 1) * height // (2 * out_h)
    return index[rows][:, columns]


def area_weights(source: int, out: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """([out, k] source indices, [out, k] int64 weights) of shrinking a side of `source` pixels to
    `out`: in units of 1 / (source * out) of a source pixel, pixel i spans [i * out, (i + 1) * out)
    and output pixel j spans [j * source, (j + 1) * source); a weight is their overlap (an integer;
    each output pixel's weights add up to `source`)."""
    k = -(-source // out) + 1  # source pixels an output pixel can touch
    first = torch.arange(out, device=device) * source // out
    taps = first[:, None] + torch.arange(k, device=device)[None, :]
    start = torch.maximum(taps * out, (torch.arange(out, device=device) * source)[:, None])
    end = torch.minimum((taps + 1) * out, (torch.arange(out, device=device)[:, None] + 1) * source)
    weights = (end - start).clamp(min=0).to(torch.int64)
    return taps.clamp(max=source - 1), weights


def area_mean(values: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """[out_h, out_w] int64: the area-weighted mean of int64 `values` [H, W] (each side shrunk,
    width to size[0], height to size[1]), rounded half up: exact integers throughout
    (sum(v * wx * wy) + W * H // 2) // (W * H)."""
    height, width = values.shape
    out_w, out_h = size
    taps, weights = area_weights(width, out_w, values.device)
    columns = (values[:, taps] * weights).sum(-1)  # [H, out_w], in units of 1 / out_w
    taps, weights = area_weights(height, out_h, values.device)
    both = (columns[taps] * weights[:, :, None]).sum(1)  # [out_h, out_w]
    area = width * height
    return (both + area // 2) // area


def gif_resample(preset: Preset) -> tuple[str, tuple[int, int]]:
    """(resample, digits) of the preset's GIF downscale (downscale's arguments): area only where
    indices average to a colour between theirs (not the heading layer's hue wheel: nearest)."""
    resample = preset.output.gif_resample or "nearest"
    if preset.palette.layer == "heading":
        return "nearest", (256, 1)
    if preset.species is not None and preset.palette.layer == "trail":
        return resample, (PRODUCT_LEVELS[len(preset.species)], len(preset.species))
    return resample, (256, 1)
