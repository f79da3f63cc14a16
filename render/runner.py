"""The runner: a validated Preset in, finished files out.

Chooses the backend and device, checks that the simulation fits in memory before allocating it,
advances the simulation frame by frame, colours each frame on the device, and hands the 8-bit
frames to one encoder worker per format behind a bounded queue.
"""

from __future__ import annotations

import os
import platform
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from physarum.kernels import get_backend
from physarum.render import __version__
from physarum.kernels.api import build_tables, spawn
from physarum.render.colour import Colourist
from physarum.render.encode import GifWriter, Mp4Writer, PngWriter, even_size, write_json
from physarum.render.preset import MP4_MAX_SIDE, Preset

QUEUE_FRAMES = 4  # frames in flight per encoder: enough to overlap, little memory


class RenderError(Exception):
    """A problem that stops a render before or while it runs (not a bug): a clear message."""


def version() -> str:
    return __version__


def embedded_text(preset: Preset) -> str:
    """What every output carries: a YAML preset that `physarum render --from` reads back."""
    return f"# physarum {version()}\n{preset.to_yaml()}"


# ---------------------------------------------------------------------------------------------
# Backend, device and memory


def interpreter_mode() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def resolve_device(requested: str | None) -> torch.device:
    if requested is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(requested)
    except RuntimeError:
        raise RenderError(f"--device {requested!r}: not a device; use cpu, cuda or cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RenderError(f"--device {requested}: no CUDA GPU is available here; use --device cpu")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise RenderError(f"--device {requested}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if device.type not in ("cpu", "cuda"):
        raise RenderError(f"--device {requested}: only cpu and cuda devices are supported")
    return device


def _triton_available() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_backend(requested: str, device: torch.device) -> str:
    """'torch' or 'triton' for --backend auto|torch|triton on `device`."""
    if requested == "auto":
        return "triton" if device.type == "cuda" and _triton_available() else "torch"
    if requested == "torch":
        return "torch"
    if requested != "triton":
        raise RenderError(f"--backend {requested!r}: choose auto, torch or triton")
    if not _triton_available():
        raise RenderError("--backend triton: Triton is not installed (pip install 'physarum[triton]')")
    if device.type != "cuda" and not interpreter_mode():
        raise RenderError("--backend triton needs a CUDA GPU and none is in use here; use --backend "
                          "torch (or set TRITON_INTERPRET=1 before Python starts, for tests)")
    return "triton"


def estimated_bytes(preset: Preset, backend: str, batch: int = 1) -> int:
    """Peak device bytes of a render, counted from the backend's own tensors and temporaries."""
    agents, cells = preset.agents.count, preset.canvas.width * preset.canvas.height
    if backend == "triton":
        per_agent, per_cell = 10, 4 * 2 + 4 * 2 + 8
    else:  # the reference's int64 index and gather temporaries
        per_agent, per_cell = 160, 4 * 14 + 8
    frame = cells * 8  # kthvalue copy, index and RGB frames
    return batch * (agents * per_agent + cells * per_cell) + frame


def available_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo") as meminfo:
            fields = dict(line.split(":", 1) for line in meminfo)
        return int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_memory(preset: Preset, backend: str, device: torch.device, batch: int = 1) -> None:
    needed, free = estimated_bytes(preset, backend, batch), available_bytes(device)
    if needed > free:
        gib = 2.0**30
        raise RenderError(
            f"{preset.name}: canvas {preset.canvas.width}x{preset.canvas.height} with "
            f"{preset.agents.count} agents needs about {needed / gib:.1f} GiB on {device} "
            f"({backend} backend) but {free / gib:.1f} GiB are free; lower canvas or agents.count")


def check_formats(preset: Preset) -> list[str]:
    """Refuse what a format cannot hold; return notes on what was adjusted."""
    notes = []
    width, height = preset.canvas.width, preset.canvas.height
    if "mp4" in preset.output.formats:
        if max(width, height) > MP4_MAX_SIDE:
            raise RenderError(f"{preset.name}: MP4 (H.264) allows at most {MP4_MAX_SIDE} pixels per side, "
                              f"the canvas is {width}x{height}; remove mp4 from output.formats")
        if even_size(width, height) != (width, height):
            notes.append("mp4 padded from {}x{} to {}x{} (H.264 yuv420p needs even sides)".format(
                width, height, *even_size(width, height)))
    return notes


# ---------------------------------------------------------------------------------------------
# Encoder workers


class EncoderWorker:
    """One output format encoded in a background thread behind a bounded queue."""

    def __init__(self, writer, wants_rgb: bool, colourist: Colourist):
        self.writer, self.wants_rgb, self.colourist = writer, wants_rgb, colourist
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_FRAMES)
        self.error: BaseException | None = None
        self.seconds = 0.0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            if self.error is not None:
                continue  # drain so that the producer never blocks on a dead worker
            frame, index, rgb = item
            started = time.perf_counter()
            try:
                if self.wants_rgb:
                    self.writer.write(rgb)
                else:
                    self.writer.write(index, self.colourist.table(frame))
            except BaseException as error:  # reported to the main thread at the next put
                self.error = error
            self.seconds += time.perf_counter() - started

    def put(self, frame: int, index: np.ndarray, rgb: np.ndarray | None) -> None:
        self.raise_error()
        self.queue.put((frame, index, rgb))

    def raise_error(self) -> None:
        if self.error is not None:
            raise RenderError(f"{self.writer.path.name}: encoder failed: {self.error}") from self.error

    def finish(self) -> None:
        self.queue.put(None)
        self.thread.join()
        self.raise_error()
        self.writer.commit()

    def abort(self) -> None:
        self.error = self.error or RuntimeError("aborted")
        self.queue.put(None)
        self.thread.join()
        self.writer.abort()


# ---------------------------------------------------------------------------------------------
# Rendering


@dataclass
class RenderResult:
    outputs: dict[str, Path]
    backend: str
    device: str
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def output_paths(preset: Preset, out_dir: Path) -> dict[str, Path]:
    folder = Path(out_dir) / preset.name
    stem = f"{preset.name}-s{preset.seed}"
    return {fmt: folder / f"{stem}.{fmt}" for fmt in (*preset.output.formats, "json")}


def make_simulation(preset: Preset, backend: str, device: torch.device):
    """The chosen backend's simulation of one preset, spawned on `device`."""
    state = spawn([preset.seed], preset.agents.count, preset.canvas.width, preset.canvas.height,
                  preset.agents.spawn, preset.agents.radius, device=device)
    tables = build_tables([preset.model_params()], device=device)
    return get_backend(backend)(state, tables)


def _open_writers(preset: Preset, paths: dict[str, Path], colourist: Colourist) -> list[EncoderWorker]:
    text, out = embedded_text(preset), preset.output
    width, height = preset.canvas.width, preset.canvas.height
    workers = []
    for fmt in out.formats:
        if fmt == "gif":
            writer = GifWriter(paths[fmt], width, height, out.fps, out.loop, text, colourist.table(0))
        elif fmt == "mp4":
            writer = Mp4Writer(paths[fmt], width, height, out.fps, text)
        else:
            writer = PngWriter(paths[fmt], text)
        workers.append(EncoderWorker(writer, wants_rgb=fmt != "gif", colourist=colourist))
    return workers


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return platform.processor() or platform.machine() or "cpu"


def render(preset: Preset, backend: str = "auto", device: str | None = None,
           out_dir: str | Path = "outputs", quiet: bool = False) -> RenderResult:
    """Render a preset to its output files; returns where they are and how long it took."""
    torch_device = resolve_device(device)
    backend = resolve_backend(backend, torch_device)
    notes = check_formats(preset)
    check_memory(preset, backend, torch_device)
    paths = output_paths(preset, Path(out_dir))
    paths["json"].parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    simulation = make_simulation(preset, backend, torch_device)
    colourist = Colourist(preset.palette)
    workers = _open_writers(preset, paths, colourist)
    wants_rgb = any(w.wants_rgb for w in workers)
    simulate = colour = 0.0
    try:
        simulation.advance(preset.run.warmup)
        remaining = preset.run.steps
        with tqdm(total=preset.frames, unit="frame", disable=quiet, leave=False,
                  desc=preset.name, dynamic_ncols=True) as bar:
            for frame in range(preset.frames):
                t0 = time.perf_counter()
                steps = min(preset.run.steps_per_frame, remaining)
                simulation.advance(steps)
                remaining -= steps
                trail = simulation.trail[0]
                t1 = time.perf_counter()
                index = colourist.index_frame(trail)
                rgb = colourist.rgb(index, frame).cpu().numpy() if wants_rgb else None
                index = index.cpu().numpy()
                t2 = time.perf_counter()
                simulate, colour = simulate + t1 - t0, colour + t2 - t1
                for worker in workers:
                    worker.put(frame, index, rgb)
                bar.update(1)
        for worker in workers:
            worker.finish()
    except BaseException:
        for worker in workers:
            worker.abort()
        raise
    timings = {"simulate_s": simulate, "colour_s": colour, "total_s": time.perf_counter() - started}
    timings.update({f"encode_{w.writer.path.suffix[1:]}_s": w.seconds for w in workers})
    result = RenderResult(paths, backend, _device_name(torch_device), timings, notes)
    write_json(paths["json"], sidecar(preset, result))
    return result


def sidecar(preset: Preset, result: RenderResult) -> dict:
    return {
        "physarum_version": version(),
        "preset": preset.model_dump(mode="json"),
        "preset_yaml": embedded_text(preset),
        "seed": preset.seed,
        "backend": result.backend,
        "device": result.device,
        "torch_version": torch.__version__,
        "frames": preset.frames,
        "steps": preset.run.steps,
        "timings": {k: round(v, 4) for k, v in result.timings.items()},
        "notes": result.notes,
        "outputs": {fmt: {"file": p.name, "bytes": p.stat().st_size}
                    for fmt, p in result.outputs.items() if fmt != "json"},
    }
