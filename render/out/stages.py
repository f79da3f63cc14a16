"""Which stage bound a render: the simulation, the colouring, the host's own work, or an encoder.

The render's thread spends a frame loop (timings frames_s) and the files' end (finish_s) in one
of four ways, each measured where it happens:

- waiting for an encoder: a full queue to its thread (out/frames.py EncoderWorker.write), and
  after the last frame its writer's end (end_input, complete): `wait_<encoder>`;
- waiting for the device (CUDA): the event of each frame's copies (FramePipeline.hand_over),
  split into the simulation and the colouring by their device time (CUDA events around each
  frame's colouring: the colouring is the time between a frame's two events, the simulation the
  time from the previous frame's end to this frame's start);
- on the CPU, simulating and colouring are the thread's own work: the colouring is the time in
  FramePipeline.submit, the simulation the rest of the frame loop;
- the rest, on CUDA: the host's own work (launches, copies, the loop's Python): `host`.

The stage with the most seconds bound the render (`bound`); the sidecar's timings carry each
(stage_*_s) and the CLI's summary line names it.
"""

from __future__ import annotations

import time

import torch


class StageClock:
    """A frame pipeline's colouring and device time (FramePipeline's start, stop, done)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        self.colour_s = 0.0  # the render's thread in submit (colouring launched or done)
        self.device_wait_s = 0.0  # the render's thread waiting for a frame's copies (CUDA)
        self.gpu = {"simulation": 0.0, "colour": 0.0}  # device seconds, from CUDA events
        self._begins: dict[int, torch.cuda.Event] = {}
        self._last_end: torch.cuda.Event | None = None

    def start(self) -> tuple[float, torch.cuda.Event | None]:
        """Before a frame's colouring."""
        event = None
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
        return time.perf_counter(), event

    def stop(self, mark: tuple[float, torch.cuda.Event | None]) -> torch.cuda.Event | None:
        """After a frame's colouring and copies: the event its hand-over waits for (CUDA)."""
        self.colour_s += time.perf_counter() - mark[0]
        if not self.cuda:
            return None
        end = torch.cuda.Event(enable_timing=True)
        end.record(torch.cuda.current_stream(self.device))  # the copies' device, not device 0
        self._begins[id(end)] = mark[1]
        return end

    def wait(self, end: torch.cuda.Event) -> None:
        """Wait for a frame's copies (its end event), counting the wait and its device time."""
        began = time.perf_counter()
        end.synchronize()
        self.device_wait_s += time.perf_counter() - began
        begin = self._begins.pop(id(end), None)
        if begin is None:
            return
        self.gpu["colour"] += begin.elapsed_time(end) / 1000
        if self._last_end is not None:
            self.gpu["simulation"] += self._last_end.elapsed_time(begin) / 1000
        self._last_end = end


def stage_timings(
    clock: StageClock | None, waits: dict[str, tuple[float, float]], timings: dict[str, float]
) -> dict:
    """Each stage's seconds of a job's render (stage_<name>_s), from its pipeline's clock, its
    encoders' waits by name (in the frame loop, at the files' end) and the render's phases
    (frames_s, finish_s)."""
    if clock is None or "frames_s" not in timings:
        return {}
    frames = timings["frames_s"]
    waited = sum(a + b for a, b in waits.values())
    stages = {}
    if clock.cuda:
        device = clock.gpu["simulation"] + clock.gpu["colour"]
        share = clock.gpu["simulation"] / device if device > 0 else 0.0
        stages["simulation"] = clock.device_wait_s * share
        stages["colour"] = clock.device_wait_s * (1 - share)
        stages["host"] = max(0.0, frames + timings.get("finish_s", 0.0) - clock.device_wait_s - waited)
    else:
        stages["colour"] = clock.colour_s
        # the frame loop's rest: the simulation's steps (and the loop around them)
        in_loop = sum(a for a, _ in waits.values())
        stages["simulation"] = max(0.0, frames - clock.colour_s - in_loop)
    for name, (in_loop, at_end) in waits.items():
        stages[f"wait_{name}"] = in_loop + at_end
    return {f"stage_{name}_s": seconds for name, seconds in stages.items()}


def bound(timings: dict[str, float]) -> str | None:
    """The stage with the most seconds ("simulation", "colour", "host", "encoder gif", ...),
    None where the timings have no stages."""
    stages = {k[len("stage_") : -len("_s")]: v for k, v in timings.items() if k.startswith("stage_")}
    if not stages:
        return None
    name = max(stages, key=stages.get)
    return f"encoder {name[len('wait_') :]}" if name.startswith("wait_") else name
