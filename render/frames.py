"""Frames on their way to the encoders: coloured on the device, copied into a ring of host
buffers (pinned on CUDA) and handed to one encoder worker thread per output behind a bounded
queue.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

from physarum.render.colour import Colourist, downscale, preview_size
from physarum.render.errors import RenderError
from physarum.render.preset import Preset

QUEUE_FRAMES = 4  # frames in flight per encoder: enough to overlap, little memory
# What each output reads of a frame; a PNG still needs only the last frame's RGB.
FRAME_ARRAY = {"gif": "preview", "mp4": "rgb", "png": "last_rgb", "frames": "rgb"}


@dataclass
class Frame:
    """One frame on the host: what the encoders need, in host (pinned where possible) memory.

    preview: the GIF's (scaled) index frame [h, w] uint8; rgb: [H, W, 3] uint8. Arrays a frame
    does not need are None. They are slots of a ring that is reused QUEUE_FRAMES + 3 frames
    later, by which time every worker has finished with them.
    """

    number: int
    preview: np.ndarray | None
    rgb: np.ndarray | None


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
    """One output (or a child process of several) encoded in a background thread behind a
    bounded queue. needs: the Frame arrays it reads ("preview", "rgb", or "last_rgb": the RGB of
    the frames that have one, the last at least)."""

    def __init__(self, name: str, writer, needs: tuple[str, ...], colourist: Colourist):
        self.name, self.writer, self.needs, self.colourist = name, writer, needs, colourist
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_FRAMES)
        self.error: BaseException | None = None
        self.seconds = 0.0
        self.frames = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _feed(self, frame: Frame) -> None:
        if self.needs == ("rgb",):  # MP4, frames
            self.writer.write(frame.rgb)
        elif self.needs == ("last_rgb",):  # PNG: every frame that has its RGB, the last at least
            if frame.rgb is not None:
                self.writer.write(frame.rgb)
        elif self.needs == ("preview",):  # GIF
            self.writer.write(frame.preview, self.colourist.table(frame.number))
        else:  # an EncoderProcess: what its outputs need
            self.writer.write(frame.preview, self.colourist.table(frame.number), frame.rgb)

    def _run(self) -> None:
        while (frame := self.queue.get()) is not None:
            if self.error is not None:
                continue  # drain so that the producer never blocks on a dead worker
            started = time.perf_counter()
            try:
                self._feed(frame)
            except BaseException as error:  # reported to the main thread at the next put
                self.error = error
            self.seconds += time.perf_counter() - started
            self.frames += 1

    def put(self, frame: Frame) -> None:
        self.raise_error()
        self.queue.put(frame)

    def raise_error(self) -> None:
        if self.error is not None:
            raise RenderError(f"{self.writer.path.name}: encoder failed: {self.error}") from self.error

    def end_input(self) -> None:
        """Hand over the frames still queued and tell the writer that no more follow (a child
        process starts writing its files then); commit() waits for the files."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
        self.raise_error()
        if hasattr(self.writer, "end_input"):
            self.writer.end_input()

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
    """Colours frames on the device, copies them to the host and feeds the encoder workers.

    A frame's copy is started and the next frame's simulation is queued before the frame is
    handed over, so on a GPU the copy overlaps the simulation; workers encode in the background.
    """

    def __init__(
        self, preset: Preset, colourist: Colourist, workers: list[EncoderWorker], device: torch.device
    ):
        self.colourist, self.workers = colourist, workers
        self.needs = {name for w in workers for name in w.needs}
        self.preview = preview_size(preset.canvas.width, preset.canvas.height, preset.output.gif_scale)
        # Frame f is copied into the slot of frame f - slots. When it is, frames up to f - 2 have
        # been handed over (the pipeline lags one frame), so each worker holds at most
        # QUEUE_FRAMES of them queued plus one in hand, the oldest f - 2 - QUEUE_FRAMES: every
        # frame up to f - 3 - QUEUE_FRAMES is done with, hence QUEUE_FRAMES + 3 slots.
        self.ring = HostRing(device, QUEUE_FRAMES + 3)
        self.pending: list[tuple[Frame, torch.cuda.Event | None]] = []
        self.device = device
        self.last = preset.frames - 1

    def submit(self, number: int, trail: torch.Tensor) -> None:
        """Colour frame `number` of a trail map [H, W] (or the species' maps [S, H, W])."""
        want_rgb = "rgb" in self.needs or ("last_rgb" in self.needs and number == self.last)
        index, rgb = self.colourist.colour(trail, number, want_rgb)
        arrays = {}
        if "preview" in self.needs:
            arrays["preview"] = self.ring.copy("preview", number, downscale(index, self.preview))
        if want_rgb:
            arrays["rgb"] = self.ring.copy("rgb", number, rgb)
        event = None
        if self.device.type == "cuda":
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(self.device))  # the copies' device, not device 0
        frame = Frame(number, arrays.get("preview"), arrays.get("rgb"))
        self.pending.append((frame, event))

    def hand_over(self, keep: int = 0) -> None:
        """Give every pending frame but the last `keep` to the workers, once it is on the host."""
        while len(self.pending) > keep:
            frame, event = self.pending.pop(0)
            if event is not None:
                event.synchronize()
            frame = Frame(
                frame.number, *(None if a is None else a.numpy() for a in (frame.preview, frame.rgb))
            )
            for worker in self.workers:
                worker.put(frame)
