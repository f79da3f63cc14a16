"""The volume renderer: a 3D trail [D, H, W] -> an RGB frame, exactly (docs/3d.md).

Emission-absorption ray marching in integers, so that every backend and device gives the same
bytes:
1. levels: the trail's 8-bit levels by the preset's Colourist (its exact thresholds: levels,
   gamma, high: auto), the same as a 2D trail's indices;
2. transfer: a level L emits the frame's palette colour table[L] and has opacity
   alpha[L] = round(ALPHA_ONE * opacity * (L / 255) ** curve) (0 below camera.floor), a table
   made on the host from Fractions (alpha_table);
3. rays: the frame's View (render/look/camera.py, integers from exact Decimal arithmetic); the
   direction of pixel (i, j) at FIX bits is floor((H * forward + right * (2i + 1 - W) +
   up * (H - 1 - 2j)) / H), sample k's position origin + (depth_k * direction >> FIX);
4. sampling: nearest (the voxel holding the position) or trilinear (the 8 voxels' levels
   weighted by 8-bit fractions, rounded: (sum + 2 ** 23) >> 24); voxels outside are level 0;
5. compositing front to back in 16-bit fixed point: T = 65536; at each sample
   w = (alpha * T) >> 12, T -= w, C += colour * w; with G = round(256 * camera.gain), the pixel
   is min(255, ((C * G >> 8) + background * T + 32768) >> 16).
Every step is an integer tensor op (no float, no reduction whose order differs by device).
SIGTERM stops a frame between chunks of samples (interrupts.stop_if_requested): a large frame
marches for tens of seconds on a CPU.
A preset's `look` shapes the levels of step 1 and then acts on the frame (render/look/volume_look.py).

For the GIF, palette_frame gives each RGB frame its own palette of at most 256 colours, exactly
(VolumeColourist.colour).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

import numpy as np
import torch

from ..base.interrupts import stop_if_requested
from ..preset import Preset
from ..preset.camera import Camera
from ..preset.palettes import parse_hex
from ..sim.course import Course
from .camera import FIX, View, lens_views
from .colour import Colourist, has_triton
from .loops import shown_frames
from .volume_look import VolumeLook

ALPHA_BITS = 12
ALPHA_ONE = 1 << ALPHA_BITS
GAIN_BITS = 8
GAIN_ONE = 1 << GAIN_BITS
LIGHT_BITS = 16  # transmittance T in [0, 2 ** 16]
CHUNK_ELEMENTS = 1 << 22  # samples x pixels gathered at once on a GPU
CPU_CHUNK_ELEMENTS = 1 << 17  # ... on a CPU (small: the temporaries stay in cache, 4-8x faster)


# Bytes a camera pixel takes while its frame is made: its ray, light and colour sums, a chunk's
# int64 temporaries (on a CPU a chunk is one sample of every pixel from 2^17 pixels on), the
# composited frame's int64 steps, the GIF's palette search (bins, inverse, lookup) and the frame's
# copies. Measured as the slope of the peak resident memory of one frame (VolumeColourist.colour,
# torch on the CPU, a 32^3 volume, 64 samples) against its pixels: 381 B/pixel from 256^2 to
# 512^2, 415 from 640^2 to 768^2, 533 from 768^2 to 1024^2 (tests/test_look_volume.py measures it).
PIXEL_BYTES = 576


def working_bytes(preset: Preset) -> int:
    """Device bytes a 3D preset's frame takes beyond its trail (an upper estimate): the levels,
    the index copy and the packed corners (packed_corners, about 24 a voxel), a chunk's int64
    temporaries (about 16 a sample), PIXEL_BYTES a camera pixel, the GIF's palette search
    (32768 x 256)."""
    width, height = preset.frame_size
    voxels = preset.canvas.width * preset.canvas.height * (preset.canvas.depth or 1)
    return voxels * 30 + CHUNK_ELEMENTS * 8 * 16 + width * height * PIXEL_BYTES + (1 << 15) * 256 * 8 * 3


def alpha_table(camera: Camera) -> np.ndarray:
    """[256] int64 opacities at ALPHA_BITS fixed point: 0 below camera.floor, else
    round_half_even(ALPHA_ONE * opacity * (L / 255) ** curve), from exact Fractions."""
    opacity = Fraction(camera.opacity)
    table = np.zeros(256, dtype=np.int64)
    for level in range(max(1, camera.floor), 256):
        table[level] = round(ALPHA_ONE * opacity * Fraction(level, 255) ** camera.curve)
    return table


def ray_directions(v: View, device: torch.device) -> torch.Tensor:
    """[3, P] int64: each pixel's direction (x, y, z) at FIX bits, P = W * H in row order."""
    out_w, out_h = v.size
    across = (torch.arange(out_w, device=device, dtype=torch.int64) * 2 + 1 - out_w)[None, :]
    down = (out_h - 1 - 2 * torch.arange(out_h, device=device, dtype=torch.int64))[:, None]
    rows = []
    for axis in range(3):
        d = out_h * v.forward[axis] + v.right[axis] * across + v.up[axis] * down
        rows.append(torch.div(d, out_h, rounding_mode="floor").reshape(-1))
    return torch.stack(rows)


def _gather(padded: torch.Tensor, grid: tuple[int, int, int], x, y, z) -> torch.Tensor:
    """int64 levels of voxels (x, y, z) (any shape) from the levels padded by one empty voxel
    on every side (flattened): a voxel outside the grid reads the padding, level 0."""
    depth, height, width = grid
    x, y, z = (c.clamp(-1, side) + 1 for c, side in zip((x, y, z), (width, height, depth)))
    return padded[(z * (height + 2) + y) * (width + 2) + x].to(torch.int64)


def sample_levels(
    padded: torch.Tensor, grid, points: list[torch.Tensor], mode: str, corners=None
) -> torch.Tensor:
    """int64 levels at positions points = [x, y, z] (voxels at FIX bits); padded: the levels
    with one empty voxel round them, flattened (_gather). Trilinear reads corners (packed_corners
    of the levels) where given: the same levels with two gathers instead of eight."""
    if mode == "nearest":
        return _gather(padded, grid, *(p >> FIX for p in points))
    shifted = [p - (1 << (FIX - 1)) for p in points]  # voxel centres at integer positions
    base = [s >> FIX for s in shifted]
    frac = [(s & ((1 << FIX) - 1)) >> (FIX - 8) for s in shifted]  # 8-bit fractions
    if corners is not None:
        return _packed_trilinear(corners, grid, base, frac)
    total = torch.zeros_like(base[0])
    for corner in range(8):
        bits = [(corner >> axis) & 1 for axis in range(3)]
        weight = None
        for axis in range(3):
            w = frac[axis] if bits[axis] else 256 - frac[axis]
            weight = w if weight is None else weight * w
        total += weight * _gather(padded, grid, *(b + bit for b, bit in zip(base, bits)))
    return (total + (1 << 23)) >> 24


def packed_corners(levels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(near, far): flat int64 [(D + 3) (H + 3) (W + 3)], for each base voxel (x, y, z) of
    -2 .. side along each axis, the levels of its corners (x + dx, y + dy, z) (near) and
    (x + dx, y + dy, z + 1) (far), byte dx + 2 dy; voxels outside the grid are level 0."""
    wide = torch.nn.functional.pad(levels, (2, 2, 2, 2, 2, 2)).to(torch.int64)
    depth, height, width = (side - 1 for side in wide.shape)
    words = []
    for dz in (0, 1):
        word = torch.zeros((depth, height, width), dtype=torch.int64, device=levels.device)
        for byte in range(4):
            dx, dy = byte & 1, byte >> 1
            word |= wide[dz : dz + depth, dy : dy + height, dx : dx + width] << (8 * byte)
        words.append(word.reshape(-1))
    return words[0], words[1]


def _packed_trilinear(corners, grid, base, frac) -> torch.Tensor:
    """The trilinear levels of sample_levels from packed_corners: the same integer sum of the
    8 corners' weight products, as lerps along x (two 16-bit lanes a word), y, then z."""
    depth, height, width = grid
    x, y, z = (b.clamp_(-2, side) + 2 for b, side in zip(base, (width, height, depth)))
    index = (z * (height + 3) + y) * (width + 3) + x
    fx, fy, fz = frac
    gx, gy = 256 - fx, 256 - fy
    lerped = []
    for word in corners:
        packed = word[index]
        lanes = (packed & 0x00FF00FF) * gx + ((packed >> 8) & 0x00FF00FF) * fx  # dy = 0, 1 lanes
        lerped.append((lanes & 0xFFFF) * gy + (lanes >> 16) * fy)
    return (lerped[0] * (256 - fz) + lerped[1] * fz + (1 << 23)) >> 24


def render_volume(
    levels: torch.Tensor,
    v: View,
    colours: torch.Tensor,
    alpha: torch.Tensor,
    background: tuple[int, int, int],
    mode: str = "trilinear",
    gain: int = GAIN_ONE,
    kernel: bool | None = None,
) -> torch.Tensor:
    """[H, W, 3] uint8: levels [D, H, W] uint8 seen in view v, emitting colours [256, 3] times
    gain / GAIN_ONE and absorbing alpha [256] (int64, on levels' device), over background.
    kernel: march with the Triton kernel (render/look/volume_kernel.py; the same bytes); None:
    on a CUDA device where Triton is installed."""
    stop_if_requested()  # before each view (a GPU marches one in a kernel)
    device = levels.device
    grid = tuple(levels.shape)
    padded = torch.nn.functional.pad(levels, (1, 1, 1, 1, 1, 1)).reshape(-1)
    colours, alpha = colours.to(torch.int64), alpha.to(torch.int64)
    directions = ray_directions(v, device)
    if kernel or (kernel is None and device.type == "cuda" and has_triton()):
        from .volume_kernel import march  # start-up: Triton, for a GPU render only

        return march(padded, grid, directions, v, colours, alpha, background, mode == "trilinear", gain)
    pixels = directions.shape[1]
    light = torch.full((pixels,), 1 << LIGHT_BITS, dtype=torch.int64, device=device)
    total = torch.zeros((pixels, 3), dtype=torch.int64, device=device)
    depths = torch.tensor(v.depths, dtype=torch.int64, device=device)
    elements = CPU_CHUNK_ELEMENTS if device.type == "cpu" else CHUNK_ELEMENTS
    chunk = max(1, elements // max(1, pixels))
    corners = packed_corners(levels) if mode == "trilinear" else None
    for first in range(0, len(v.depths), chunk):
        stop_if_requested()  # a signal stops a frame within one chunk, not after its whole march
        s = depths[first : first + chunk, None]
        points = [v.origin[axis] + ((s * directions[axis][None, :]) >> FIX) for axis in range(3)]
        sampled = sample_levels(padded, grid, points, mode, corners)
        opacity, emitted = alpha[sampled], colours[sampled]
        for k in range(sampled.shape[0]):
            weight = (opacity[k] * light) >> ALPHA_BITS
            light -= weight
            total += emitted[k] * weight[:, None]
    back = torch.tensor(background, dtype=torch.int64, device=device)
    rgb = (
        ((total * gain) >> GAIN_BITS) + back[None, :] * light[:, None] + (1 << (LIGHT_BITS - 1))
    ) >> LIGHT_BITS
    return rgb.clamp_(0, 255).to(torch.uint8).reshape(v.size[1], v.size[0], 3)


def lens_mean(images: Iterable[torch.Tensor]) -> torch.Tensor:
    """The rounded mean of K uint8 frames of one shape (a thin lens's views): (sum + K // 2) // K,
    in integers; the frames are summed as they come, so one is held at a time."""
    total, count = None, 0
    for image in images:
        total = image.to(torch.int32) if total is None else total.add_(image.to(torch.int32))
        count += 1
    return ((total + count // 2) // count).to(torch.uint8)


def reduce_rgb(rgb: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
    """(index [H, W] uint8 on rgb's device, palette [256, 3] uint8 on the host) of an RGB frame:
    palette_frame's, the palette copied to the host (on a GPU, after the frame's work)."""
    index, palette = palette_frame(rgb)
    return index, palette.cpu().numpy()


def palette_frame(rgb: torch.Tensor, every_bin: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(index [H, W] uint8, palette [256, 3] uint8), both on rgb's device, exactly and with no
    host synchronisation on a GPU (no bincount, unique or copy: each waits for the frame):
    colours binned to 5 bits a channel; the 256 fullest bins (count, then bin number) become the
    palette, each its pixels' rounded mean colour, sorted by luma (so that a GIF budget's level
    groups and area averages mix like colours); every bin maps to its nearest palette entry
    (its own mean colour's squared distance, then the lower entry). every_bin: search for every
    bin (None: on a GPU) rather than for the bins present (found by unique, which waits)."""
    device = rgb.device
    wide = rgb.reshape(-1, 3).to(torch.int64)
    bins = ((wide[:, 0] >> 3) << 10) | ((wide[:, 1] >> 3) << 5) | (wide[:, 2] >> 3)
    ones = torch.ones((wide.shape[0], 1), dtype=torch.int64, device=device)
    totals = torch.zeros((1 << 15, 4), dtype=torch.int64, device=device)
    totals.index_add_(0, bins, torch.cat([wide, ones], 1))  # integers: the same in any order
    sums, counts = totals[:, :3], totals[:, 3]
    key = counts * (1 << 15) + torch.arange(1 << 15, device=device)
    chosen = torch.topk(key, 256).values % (1 << 15)
    used = counts[chosen] > 0
    count = counts[chosen].clamp(min=1)[:, None]
    means = torch.where(used[:, None], (sums[chosen] * 2 + count) // (2 * count), 0)
    luma = means[:, 0] * 299 + means[:, 1] * 587 + means[:, 2] * 114
    order = torch.sort(torch.where(used, luma, 1 << 30) * (1 << 15) + chosen).indices
    means, used = means[order], used[order]
    if not (device.type != "cpu" if every_bin is None else every_bin):  # the bins present: less work
        present, inverse = torch.unique(bins, return_inverse=True)
        lookup = _nearest(sums[present], counts[present], means, used)[inverse]
    else:  # every bin, so that nothing waits to learn how many are present
        lookup = _nearest(sums, counts, means, used)[bins]
    return lookup.to(torch.uint8).reshape(rgb.shape[:2]), means.to(torch.uint8)


def _nearest(
    sums: torch.Tensor, counts: torch.Tensor, means: torch.Tensor, used: torch.Tensor
) -> torch.Tensor:
    """[B] int64: for each of B bins (their colour sums [B, 3] and pixel counts [B]), the palette
    entry nearest its rounded mean colour (squared distance, then the lower entry; unused
    entries never). Distances are below 2 ** 18, so int32 holds them."""
    occupied = counts.clamp(min=1)[:, None]
    colour = ((sums * 2 + occupied) // (2 * occupied)).to(torch.int32)  # each bin's mean colour
    distance = ((colour[:, None, :] - means.to(torch.int32)[None, :, :]) ** 2).sum(-1, dtype=torch.int32)
    entries = torch.arange(256, dtype=torch.int32, device=sums.device)
    distance = torch.where(used[None, :], distance, 1 << 20) * 256 + entries
    return (distance.min(1).values % 256).to(torch.int64)


class VolumeColourist:
    """Colours a 3D preset's trail volume [D, H, W]: the volume renderer's RGB frame, and for
    the GIF an index frame with that frame's own palette (reduce_rgb). table(number) is the
    palette of the last frame coloured with that number (before any: the preset's palette)."""

    def __init__(self, preset: Preset):
        self.preset = preset
        course = Course(preset.run)  # the step of each frame (the look's values)
        self.levels = Colourist(preset.palette, preset.look, preset.seed, course.frame_end, preset.end_step)
        self.look = None if preset.look is None else VolumeLook(self.levels.hdr)  # volume_look.py
        self.camera = preset.camera or Camera()
        self.grid = (preset.canvas.depth, preset.canvas.height, preset.canvas.width)
        self.size = preset.frame_size
        self.frames = shown_frames(preset)
        self.alpha = torch.from_numpy(alpha_table(self.camera))
        self.background = parse_hex(self.camera.background)
        self.gain = round(Fraction(self.camera.gain) * GAIN_ONE)
        self.palettes: dict[int, tuple] = {}  # frame -> _on_host's (palette, event)
        self._device: dict = {}

    def render(self, trail: torch.Tensor, frame: int) -> torch.Tensor:
        """[H, W, 3] uint8: frame `frame` of the trail volume [D, H, W]."""
        device = trail.device
        if device not in self._device:
            self._device[device] = self.alpha.to(device)
        colours = torch.from_numpy(self.levels.table(frame)).to(device)
        if self.look is None:
            levels = self.levels.index_frame(trail)
        else:
            levels = self.look.levels(trail, *self.levels.bounds(trail), frame)
        views = lens_views(self.camera, self.grid, self.size, frame, self.frames)
        images = (
            render_volume(
                levels, v, colours, self._device[device], self.background, self.camera.sample, self.gain
            )
            for v in views
        )
        image = next(images) if len(views) == 1 else lens_mean(images)
        return image if self.look is None else self.look.image(image, frame)

    def colour(self, trail: torch.Tensor, frame: int, rgb: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """(index frame [H, W] uint8, RGB frame [H, W, 3] uint8) of frame `frame`."""
        image = self.render(trail, frame)
        index, palette = palette_frame(image)
        self.palettes = {frame: _on_host(palette)}
        return index, image

    def index_frame(self, trail: torch.Tensor) -> torch.Tensor:
        return self.colour(trail, 0)[0]

    def palette_index(self, frame: int) -> int:
        return self.levels.palette_index(frame)

    def table(self, frame: int) -> np.ndarray:
        """[256, 3] uint8: frame `frame`'s palette (its copy waited for), else the preset's."""
        if frame not in self.palettes:
            return self.levels.table(frame)
        palette, copied = self.palettes[frame]
        if copied is not None:
            copied.synchronize()
        return palette.numpy()

    def pending_table(self, frame: int) -> np.ndarray | torch.Tensor:
        """table(frame), or on a GPU its host copy still under way: read it once the frame's
        later work is done (FramePipeline.hand_over waits for the frame's copies)."""
        if frame not in self.palettes or self.palettes[frame][1] is None:
            return self.table(frame)
        return self.palettes[frame][0]


def _on_host(palette: torch.Tensor) -> tuple[torch.Tensor, torch.cuda.Event | None]:
    """A palette on its way to the host: (the host tensor, the CUDA event after its copy), or
    (palette, None) where it is there already."""
    if palette.device.type != "cuda":
        return palette, None
    host = torch.empty(palette.shape, dtype=palette.dtype, pin_memory=True)
    host.copy_(palette, non_blocking=True)
    copied = torch.cuda.Event()
    copied.record(torch.cuda.current_stream(palette.device))
    return host, copied
