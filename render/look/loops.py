"""Seamless loops (output.loop_mode): which simulated frames a job's outputs show, in which order.

- ping-pong: frames 0 .. F-1, then F-2 .. 1 (PingPong records the frames handed to the writers
  and replays them reversed; the PNG still stays frame F-1).
- crossfade (N = output.loop_frames): the first N trail maps are kept on the device and not shown;
  the outputs show frames N .. F-1, and frame F-N+k (k = 0 .. N-1) shows the blend
  trail[F-N+k] * (N-k)/(N+1) + trail[k] * (k+1)/(N+1). The last frame is the blend nearest
  trail[N-1], which the first shown frame, trail[N], follows: the loop has no seam.
- closest (M = output.loop_frames): a first pass simulates the run with no outputs and takes a
  signature of every frame of its second half; the pair (i, j), j - i >= M, whose signatures are
  nearest is the loop, and a second, identical pass shows frames i .. j-1 (j would follow j-1, and
  is nearest to i).

Trail-level loops (crossfade, closest) colour what they show like any frame, so every format shows
the same picture and species presets loop too. Shown frames are numbered from 0 (the palette
alternation counts them, docs/presets.md). Everything is exact: the blend is two float32 multiplies
and an add, each a separate operation (no fused multiply-add) with float32 weights computed once on
the host; the signatures and distances are integers.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..base.errors import RenderError
from ..base.interrupts import stop_if_requested
from ..formats.contract import Frame
from ..formats.registry import FORMATS
from ..preset import Preset
from ..sim.simulation import advance
from .colour import Colourist, SpeciesColourist, make_colourist, preview_size
from .layers import layer_map, needs_agents

SIGNATURE_BLOCKS = 16  # a signature: the sums of the index frame over 16 x 16 blocks
# closest compares every pair of settled frames: at most this many signature values in all
# (about 0.7e9 a second on one core of a 2-core CPU: 2**35 is under a minute there)
MAX_CLOSEST_WORK = 2**35


# ---------------------------------------------------------------------------------------------
# closest: the pair of settled frames nearest each other


@dataclass(frozen=True)
class Window:
    """The loop closest found: frames start .. end - 1 are shown, end being the frame nearest to
    start. distance: their signatures' L1 distance per cell (in index levels, 0 .. 255, of block
    means), step: the mean distance of consecutive frames over the settled half, for scale."""

    start: int
    end: int
    distance: float
    step: float


def settled_from(frames: int) -> int:
    """The first frame closest may loop from: the run's second half."""
    return frames // 2


def signature(colourist: Colourist | SpeciesColourist, maps: torch.Tensor) -> np.ndarray:
    """[S * G * G] int64: the sum of each (species') index frame over G x G blocks of the canvas
    (G = SIGNATURE_BLOCKS, fewer on a smaller side). Integers of exact index frames: the same on
    every backend and device."""
    if isinstance(colourist, SpeciesColourist):
        levels = colourist.level_frames(maps)
    else:
        levels = colourist.index_frame(maps)[None]
    species, height, width = levels.shape
    rows, columns = min(SIGNATURE_BLOCKS, height), min(SIGNATURE_BLOCKS, width)
    row = torch.arange(height, device=levels.device) * rows // height
    column = torch.arange(width, device=levels.device) * columns // width
    block = (row[:, None] * columns + column[None, :]).reshape(-1)
    sums = torch.zeros(species, rows * columns, dtype=torch.int64, device=levels.device)
    sums.index_add_(1, block, levels.reshape(species, -1).to(torch.int64))
    return sums.reshape(-1).cpu().numpy()


def closest_pair(signatures: np.ndarray, first: int, shortest: int) -> tuple[int, int, int]:
    """(i, j, distance): of the frames first .. first + len(signatures) - 1 (signatures [P, D]
    int64, one row each), the pair j - i >= shortest with the least L1 distance between their
    signatures; ties go to the smallest i, then the smallest j. SIGTERM and SIGHUP stop it
    between rows (Terminated: interrupts.stop_if_requested)."""
    best = None
    for i in range(len(signatures) - shortest):
        stop_if_requested()  # a signal stops the search within one row (a frame's comparisons)
        distances = np.abs(signatures[i + shortest :] - signatures[i]).sum(axis=1)
        j = int(np.argmin(distances))  # the first of equals: the smallest j
        if best is None or distances[j] < best[2]:
            best = (first + i, first + i + shortest + j, int(distances[j]))
    if best is None:
        raise ValueError(f"no pair of frames {shortest} or more apart among {len(signatures)}")
    return best


def closest_work(preset: Preset) -> int:
    """Signature values closest_pair compares for a preset: every pair of settled frames at
    least loop_frames apart, each signature species * SIGNATURE_BLOCKS^2 values (fewer blocks on
    a small canvas); quadratic in the frames."""
    settled = preset.frames - settled_from(preset.frames)
    apart = max(0, settled - preset.loop[1])
    blocks = min(SIGNATURE_BLOCKS, preset.canvas.height) * min(SIGNATURE_BLOCKS, preset.canvas.width)
    return apart * (apart + 1) // 2 * preset.species_count * blocks


def check_closest(preset: Preset) -> None:
    """RenderError, before any step, where closest's search would compare more than
    MAX_CLOSEST_WORK values (its cost, stated)."""
    work = closest_work(preset)
    if preset.loop[0] == "closest" and work > MAX_CLOSEST_WORK:
        settled = preset.frames - settled_from(preset.frames)
        raise RenderError(
            f"{preset.name}: loop_mode closest compares every pair of the run's last {settled} frames "
            f"(at least output.loop_frames = {preset.loop[1]} apart): {work:.2e} values, at most "
            f"{MAX_CLOSEST_WORK:.2e} (about a minute on a CPU core); fewer frames (a larger "
            "run.steps_per_frame), a larger output.loop_frames, or loop_mode crossfade"
        )


def find_windows(presets: Sequence[Preset], simulation) -> list[Window | None]:
    """The closest loop of each preset of a batch with loop_mode closest (None for the others):
    simulates the whole run (warmup, then every frame), taking the signatures of the settled
    frames. The simulation is used up; the render makes a new, identical one. A search over its
    bound (check_closest) is refused before the first step; a signal stops it between frames."""
    run = presets[0]
    for preset in presets:
        check_closest(preset)
    searching = [(b, p, make_colourist(p)) for b, p in enumerate(presets) if p.loop[0] == "closest"]
    first = settled_from(run.frames)
    signatures: dict[int, list[np.ndarray]] = {b: [] for b, _, _ in searching}
    advance(simulation, run.run.warmup)
    remaining = run.run.steps
    for number in range(run.frames):
        stop_if_requested()
        steps = min(run.run.steps_per_frame, remaining)
        advance(simulation, steps)
        remaining -= steps
        if number >= first:
            trail = simulation.trail
            agents = simulation.agents if needs_agents(p for _, p, _ in searching) else None
            for b, preset, colourist in searching:
                signatures[b].append(signature(colourist, layer_map(preset, trail, agents, b)))
    windows: list[Window | None] = [None] * len(presets)
    for b, preset, _ in searching:
        rows = np.stack(signatures[b])
        cells = preset.species_count * preset.canvas.width * preset.canvas.height
        start, end, distance = closest_pair(rows, first, preset.loop[1])
        step = np.abs(np.diff(rows, axis=0)).sum(axis=1).mean() if len(rows) > 1 else 0.0
        windows[b] = Window(start, end, distance / cells, float(step) / cells)
    return windows


# ---------------------------------------------------------------------------------------------
# What each simulated frame becomes


def shown_frames(preset: Preset) -> int:
    """The frames a preset's outputs show before any ping-pong replay, the fewest for closest
    (its shortest loop; the loop it finds may be longer): crossfade F - N, closest N, else F
    (F frames simulated, N = output.loop_frames). The one place this rule is written."""
    mode, count = preset.loop
    return {"crossfade": preset.frames - count, "closest": count}.get(mode, preset.frames)


def kept_maps(preset: Preset) -> int:
    """The trail maps a preset's loop keeps on the device until the end: crossfade's first N."""
    mode, count = preset.loop
    return count if mode == "crossfade" else 0


class TrailLoop:
    """Turns a job's simulated frames into the frames its outputs show (take), by its loop mode.

    frames: how many frames the outputs show before any ping-pong replay. window: closest's loop.
    """

    def __init__(self, preset: Preset, window: Window | None = None):
        self.mode, self.count = preset.loop
        self.simulated = preset.frames
        self.window = window
        self.kept: list[torch.Tensor | None] = []
        self.taken = 0  # simulated frames handed to take() so far
        if self.mode == "closest":
            if window is None:
                raise ValueError("a closest loop needs its window (find_windows)")
            self.first, self.frames = window.start, window.end - window.start
        else:
            self.first, self.frames = kept_maps(preset), shown_frames(preset)

    def take(self, number: int, maps: torch.Tensor) -> list[tuple[int, torch.Tensor]]:
        """The (shown frame number, maps) that simulated frame `number` gives: none, or one."""
        self.taken = number + 1
        if self.mode == "crossfade":
            return self._crossfade(number, maps)
        if not self.first <= number < self.first + self.frames:
            return []
        return [(number - self.first, maps)]

    def _crossfade(self, number: int, maps: torch.Tensor) -> list[tuple[int, torch.Tensor]]:
        blended = self.simulated - self.count  # frame F - N, the first blended into an early one
        if number < self.count:
            self.kept.append(maps.clone())
            return []
        if number < blended:
            return [(number - self.count, maps)]
        k = number - blended
        early, self.kept[k] = self.kept[k], None  # each early map is blended once
        return [(number - self.count, crossfade(maps, early, k, self.count))]

    def shown_before(self, taken: int) -> int:
        """The frames shown (handed to the outputs, before any replay) once `taken` simulated
        frames were taken: what a frame journal holds then."""
        return max(0, min(taken - self.first, self.frames))

    def members(self) -> dict[str, np.ndarray]:
        """What a checkpoint records of the loop now (render/sim/checkpoint.py LOOP_MEMBERS):
        the frames taken, crossfade's early maps not yet blended, closest's window."""
        if self.mode == "none":
            return {}
        out = {"loop_taken": np.array(self.taken, np.int64)}
        if self.mode == "crossfade":
            waiting = [m for m in self.kept if m is not None]
            shape = (0,) if not waiting else waiting[0].shape
            out["loop_kept"] = (
                torch.stack(waiting).cpu().numpy() if waiting else np.zeros((0, *shape), np.float32)
            )
        elif self.mode == "closest":
            w = self.window
            out["loop_window"] = np.array([w.start, w.end], np.int64)
            out["loop_window_scale"] = np.array([w.distance, w.step], np.float64)
        return out

    def restore(self, taken: int, kept: torch.Tensor | None, device: torch.device) -> None:
        """Continue after a checkpoint (members' values): `taken` frames were taken; kept:
        crossfade's early maps not yet blended [K, ...], onto `device`."""
        self.taken = taken
        if self.mode == "crossfade":
            used = max(0, taken - (self.simulated - self.count))
            self.kept = [None] * used + [m.to(device) for m in (kept if kept is not None else [])]

    def done(self, number: int) -> bool:
        """Whether no simulated frame after `number` is shown."""
        return number + 1 >= self.first + self.frames and self.mode != "crossfade"

    def describe(self) -> dict | None:
        """What the sidecar says of the loop (None without one)."""
        if self.mode == "none":
            return None
        out: dict = {"mode": self.mode, "frames_shown": self.frames}
        if self.mode == "ping-pong":
            out["frames_shown"] = max(self.frames, 2 * self.frames - 2)
        elif self.mode == "crossfade":
            out.update(blended=self.count, first_frame=self.count)
        else:
            w = self.window
            out.update(
                shortest=self.count,
                first_frame=w.start,
                end_frame=w.end,
                distance=round(w.distance, 6),
                mean_step_distance=round(w.step, 6),
                relative=round(w.distance / w.step, 6) if w.step else None,
            )
        return out


def crossfade_weights(k: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(late, early) float32 weights of blend step k (0 .. count - 1): (count - k) / (count + 1)
    and (k + 1) / (count + 1), each rounded once to float32 on the host."""
    late = np.float32((count - k) / (count + 1))
    early = np.float32((k + 1) / (count + 1))
    return torch.tensor(late), torch.tensor(early)


def crossfade(late: torch.Tensor, early: torch.Tensor, k: int, count: int) -> torch.Tensor:
    """late * w_late + early * w_early in float32: two multiplies and an add, three separate
    operations each rounded once, so the same on every device."""
    w_late, w_early = (w.to(late.device) for w in crossfade_weights(k, count))
    return torch.add(torch.mul(late, w_late), torch.mul(early, w_early))


# ---------------------------------------------------------------------------------------------
# ping-pong: the frames again, backwards


def replay_bytes(preset: Preset, rgb: bool | None = None) -> int:
    """Host bytes a ping-pong loop's replay store (PingPong) may take: frames 1 .. F-2, each its
    GIF preview and palette (where a GIF is written) and its RGB frame (where a format reads
    every RGB frame, or `rgb`: --frames-dir), bounded as zlib could leave them (incompressible:
    its stored blocks add 5 bytes in 16 KiB, and a header); 0 without ping-pong."""
    if preset.loop[0] != "ping-pong":
        return 0
    formats = preset.output.formats
    if rgb is None:
        rgb = any(FORMATS[fmt].spec.reads == "rgb" for fmt in formats)
    width, height = preset.frame_size  # a 3D preset's: its camera image
    arrays = []
    if "gif" in formats:
        arrays.append(int(np.prod(preview_size(width, height, preset.output.gif_scale))))
    if rgb:
        arrays.append(width * height * 3)
    per_frame = sum(n + 5 * (n // 16384 + 1) + 64 for n in arrays) + (768 if "gif" in formats else 0)
    return max(0, preset.frames - 2) * (per_frame + 200)  # and the record's own objects


class PingPong:
    """Records the frames handed to the writers (compressed, zlib level 1, in memory) and gives
    frames last - 1 .. 1 back in that order, marked replay, for the writers to append: the loop
    plays forward, then backward, and the first frame follows frame 1 again. The first and last
    frames are not recorded (shown once each). Memory: the compressed preview, RGB and alpha frames.
    A sink of the frame path (render/out/sinks.py): it records what the other sinks read."""

    reads: frozenset[str] = frozenset()
    replays = False

    def __init__(self, last: int):
        self.last = last
        self.frames: list[tuple] = []  # number, preview, palette, rgb, their shapes, alpha

    def close(self, error: BaseException | None = None) -> None:
        self.frames = []

    def write(self, frame: Frame) -> None:
        """Record a frame handed over (the first and the last, and replayed ones, passed by)."""
        if frame.replay or not 0 < frame.number < self.last:
            return
        preview, rgb, alpha = frame.preview, frame.rgb, frame.alpha
        self.frames.append(
            (
                frame.number,
                None if preview is None else zlib.compress(np.ascontiguousarray(preview).data, 1),
                None if frame.palette is None else frame.palette.tobytes(),
                None if rgb is None else zlib.compress(np.ascontiguousarray(rgb).data, 1),
                () if preview is None else preview.shape,
                () if rgb is None else rgb.shape,
                None if alpha is None else zlib.compress(np.ascontiguousarray(alpha).data, 1),
            )
        )

    def replay(self) -> Iterator[Frame]:
        """Frames last - 1 .. 1, numbered on from last + 1."""
        for offset, (_, preview, palette, rgb, p_shape, r_shape, alpha) in enumerate(reversed(self.frames)):
            yield Frame(
                self.last + 1 + offset,
                None if preview is None else _array(preview, p_shape),
                None if palette is None else _array(palette, (256, 3), compressed=False),
                None if rgb is None else _array(rgb, r_shape),
                replay=True,
                alpha=None if alpha is None else _array(alpha, r_shape[:2]),
            )


def _array(data: bytes, shape: tuple, compressed: bool = True) -> np.ndarray:
    raw = zlib.decompress(data) if compressed else data
    return np.frombuffer(raw, dtype=np.uint8).reshape(shape)
