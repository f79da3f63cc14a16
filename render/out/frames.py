"""Frames on their way to their sinks (render/out/sinks.py): coloured on the device, copied
into a ring of host buffers (pinned on CUDA) and handed to each sink of the job in order. The
encoder workers are sinks (one thread per output behind a bounded queue; every worker's writer
gets every Frame and takes what it reads); so are a render's frame journal
(render/out/journal.py), a ping-pong loop's replay store (render/look/loops.py) and whatever a
caller adds. A resumed render re-feeds its journal's frames first (deliver).
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

from ..base.errors import RenderError
from ..base.files import PartialFile
from ..formats.contract import Frame, Spec, Writer
from ..formats.frames_dir import FramesDirSpec
from ..formats.registry import open_writer
from ..look.alpha import alpha_plane
from ..look.colour import Colourist, downscale, gif_resample, preview_size
from ..look.loops import PingPong
from ..look.still import still_frame
from ..preset import Preset
from .encoder_process import EncoderProcess
from .sinks import Sink
from .stages import StageClock

QUEUE_FRAMES = 4  # frames in flight per encoder: enough to overlap, little memory


class HostRing:
    """Device-to-host copies into a ring of reusable (pinned, on CUDA) host buffers."""

    def __init__(self, device: torch.device, slots: int):
        self.device, self.slots = device, slots
        self.buffers: dict[tuple[str, int], torch.Tensor] = {}

    def copy(self, name: str, frame: int, tensor: torch.Tensor) -> torch.Tensor:
        """Start copying `tensor` into the ring slot of `frame`; returns the host tensor."""
        key = (name, frame % self.slots)
        buffer = self.buffers.get(key)
        if buffer is None or buffer.shape != tensor.shape:
            pin = self.device.type == "cuda"
            buffer = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=pin)
            self.buffers[key] = buffer
        buffer.copy_(tensor, non_blocking=self.device.type == "cuda")
        return buffer


class EncoderWorker:
    """A sink: one writer (or a child process of several) fed in a background thread behind a
    bounded queue. reads: what its writer reads of a frame (the specs' `reads`: "preview", "rgb",
    or "last_rgb": the RGB of the last frame at least), which tells the pipeline what to make.
    Its files are finished by complete() and committed with the job's (render/out/job.py)."""

    replays = True  # a ping-pong loop's replayed frames are written into the files

    def __init__(self, name: str, writer: Writer, reads: Iterable[str]):
        self.name, self.writer, self.reads = name, writer, frozenset(reads)
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_FRAMES)
        self.error: BaseException | None = None
        self.seconds = 0.0
        self.frames = 0
        self.waited = [0.0, 0.0]  # the render's thread waiting for it: in the frame loop, at the end
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (frame := self.queue.get()) is not None:
            if self.error is not None:
                continue  # drain so that the producer never blocks on a dead worker
            started = time.perf_counter()
            try:
                self.writer.write(frame)
            except BaseException as error:  # reported to the main thread at the next put
                self.error = error
            self.seconds += time.perf_counter() - started
            self.frames += 1

    def write(self, frame: Frame) -> None:
        self.raise_error()
        began = time.perf_counter()
        self.queue.put(frame)
        self.waited[0] += time.perf_counter() - began

    def close(self, error: BaseException | None = None) -> None:
        """No frame follows: the files are finished (end_input) or, after an error, aborted."""
        if error is None:
            self.end_input()
        else:
            self.abort()

    def raise_error(self) -> None:
        if self.error is not None:
            raise RenderError(f"{self.writer.path.name}: encoder failed: {self.error}") from self.error

    def end_input(self) -> None:
        """Hand over the frames still queued and tell the writer that no more follow (a child
        process starts writing its files then); commit() waits for the files."""
        if self.thread.is_alive():
            began = time.perf_counter()
            self.queue.put(None)
            self.thread.join()
            self.waited[1] += time.perf_counter() - began
        self.raise_error()
        if hasattr(self.writer, "end_input"):
            self.writer.end_input()

    def complete(self) -> list[PartialFile]:
        """Wait for the writer's files, complete under their temporary names (for the runner to
        commit with the render's other files); returns them. The time the writer takes to finish
        counts in `seconds` (x264's frame threads encode their last frames then)."""
        self.end_input()
        started = time.perf_counter()
        try:
            return self.writer.complete()
        finally:
            self.seconds += time.perf_counter() - started
            self.waited[1] += time.perf_counter() - started

    def finish(self) -> None:
        self.end_input()
        self.writer.commit()

    def abort(self) -> None:
        self.error = self.error or RuntimeError("aborted")
        self.queue.put(None)
        self.thread.join()
        self.writer.abort()

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds else 0.0


class FramePipeline:
    """Colours frames on the device, copies them to the host and hands them to the job's sinks.

    A frame's copy is started and the next frame's simulation is queued before the frame is
    handed over, so on a GPU the copy overlaps the simulation; workers encode in the background.
    """

    def __init__(
        self,
        preset: Preset,
        colourist: Colourist,
        sinks: Iterable[Sink],
        device: torch.device,
        frames: int | None = None,
    ):
        """sinks: where the frames go, in order (more may be added: add()); frames: how many
        frames are submitted (numbered 0 .. frames - 1; the preset's frames unless a loop shows
        fewer). With output.loop_mode ping-pong, the pipeline keeps a replay store among its
        sinks and finish() hands its frames, backwards, to the sinks that take replays."""
        self.colourist, self.sinks = colourist, list(sinks)
        self.preview = preview_size(*preset.frame_size, preset.output.gif_scale)
        self.resample = gif_resample(preset)  # downscale's (resample, digits): output.gif_resample
        # Frame f is copied into the slot of frame f - slots. When it is, frames up to f - 2 have
        # been handed over (the pipeline lags one frame), so each worker holds at most
        # QUEUE_FRAMES of them queued plus one in hand, the oldest f - 2 - QUEUE_FRAMES: every
        # frame up to f - 3 - QUEUE_FRAMES is done with, hence QUEUE_FRAMES + 3 slots. A sink
        # that keeps a frame longer copies it (sinks.Sink).
        self.ring = HostRing(device, QUEUE_FRAMES + 3)
        self.pending: list[tuple[Frame, torch.cuda.Event | None]] = []
        self.device = device
        self.clock = StageClock(device)  # colouring and device time, for the stage that bound it
        self.last = (preset.frames if frames is None else frames) - 1
        self.ping_pong = PingPong(self.last) if preset.loop[0] == "ping-pong" else None
        if self.ping_pong is not None:
            self.sinks.append(self.ping_pong)
        self.reads = _reads(self.sinks)

    def add(self, sink: Sink) -> None:
        """A sink given every frame handed over from now on."""
        self.sinks.append(sink)
        self.reads = _reads(self.sinks)

    def submit(self, number: int, trail: torch.Tensor) -> None:
        """Colour frame `number` of a trail map [H, W] (or the species' maps [S, H, W])."""
        mark = self.clock.start()
        want_alpha = "rgba" in self.reads or ("last_rgba" in self.reads and number == self.last)
        want_rgb = want_alpha or "rgb" in self.reads or ("last_rgb" in self.reads and number == self.last)
        index, rgb = self.colourist.colour(trail, number, want_rgb)
        alpha = self.ring.copy("alpha", number, alpha_plane(index)) if want_alpha else None
        still = None
        if "last_still" in self.reads and number == self.last:  # once: copied now, not in the ring
            colour, light = still_frame(self.colourist, trail, number)
            still = (colour.cpu().numpy().astype(np.uint16), None if light is None else light.cpu().numpy())
        preview = palette = None
        if "preview" in self.reads:
            preview = self.ring.copy("preview", number, downscale(index, self.preview, *self.resample))
            palette = _palette(self.colourist, number)
        # a colourist may make the RGB frame anyway (a 3D frame is RGB first): only a wanted one is
        # copied to the host, the rest is dropped on the device
        rgb = self.ring.copy("rgb", number, rgb) if want_rgb else None
        event = self.clock.stop(mark)  # CUDA: recorded after the copies, on their device
        # the frame's arrays are host tensors, perhaps still being copied, until handed over
        self.pending.append((Frame(number, preview, palette, rgb, alpha=alpha, still=still), event))

    def hand_over(self, keep: int = 0) -> None:
        """Give every pending frame but the last `keep` to the sinks, once it is on the host."""
        while len(self.pending) > keep:
            frame, event = self.pending.pop(0)
            if event is not None:
                self.clock.wait(event)
            arrays = {name: _numpy(getattr(frame, name)) for name in ("preview", "palette", "rgb", "alpha")}
            self.deliver(dataclasses.replace(frame, **arrays))

    def deliver(self, frame: Frame) -> None:
        """Give a frame on the host to every sink, in order."""
        for sink in self.sinks:
            sink.write(frame)

    def finish(self) -> None:
        """Hand over every pending frame, then a ping-pong loop's frames backwards."""
        self.hand_over()
        if self.ping_pong is not None:
            replaying = [sink for sink in self.sinks if sink.replays]
            for frame in self.ping_pong.replay():
                for sink in replaying:
                    sink.write(frame)


def _reads(sinks: list[Sink]) -> set[str]:
    return {name for sink in sinks for name in sink.reads}


def _numpy(array: torch.Tensor | np.ndarray | None) -> np.ndarray | None:
    return array.numpy() if isinstance(array, torch.Tensor) else array


def _palette(colourist, number: int) -> np.ndarray | torch.Tensor:
    """Frame `number`'s palette, or (a 3D frame's on a GPU) its host copy still under way, which
    hand_over reads after the frame's event."""
    pending = getattr(colourist, "pending_table", None)
    return colourist.table(number) if pending is None else pending(number)


def open_workers(
    specs: list[Spec], job: Path, own_process: bool = False, cores: list[int] | None = None
) -> list[EncoderWorker]:
    """One encoder worker per output spec. With own_process (batches of several), one worker
    sends the GIF, MP4, WebP and PNG frames to a child process of the job's own, where they are
    encoded (render/out/encoder_process.py says why), on `cores` (machine.encoder_cores); a frames
    folder is written here. job: the outputs' path without suffix, which names the child in
    messages."""
    # the child is sent no alpha plane nor still: writers of "rgba" and the still are written here
    here = [
        s
        for s in specs
        if isinstance(s, FramesDirSpec) or not own_process or "rgba" in s.reads or s.reads == "last_still"
    ]
    child = [spec for spec in specs if spec not in here]
    workers = []
    try:
        if child:
            name = "+".join(spec.format for spec in child)
            workers.append(EncoderWorker(name, EncoderProcess(child, job, cores), {s.reads for s in child}))
        for spec in here:
            workers.append(EncoderWorker(spec.format, open_writer(spec), {spec.reads}))
    except BaseException:
        for worker in workers:
            worker.abort()
        raise
    return workers
