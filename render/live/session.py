"""The live loop: a performance's simulation stepped frame by frame on a thread of its own, each
frame coloured by the render's own pipeline and handed to a bounded queue for the page, changes
applied at the next step, pause, step and restart.

The loop steps as a render of the recorded preset does (render/live/record.py says why that is
exact): the simulation is made by sim/simulation.py from the performance's preset and runs
behind a KeyframedSimulation that follows the preset's schedules as they grow (follow), the
frames are taken where sim/course.py takes them, their maps are look/layers.py's and they are
coloured by out/frames.py's FramePipeline with the preset's own colourist. Only the frame number
and the steps are the loop's: frame n is taken after step warmup + (n + 1) * steps_per_frame.

A preset with a sound file plays to the page's audio clock (`follow_clock`): the frame shown is
floor(audio time x fps), the loop advancing the simulation to it (frames the clock passed are
stepped, not coloured) and waiting while the clock stands (paused); a clock behind the last
frame taken (a seek back, the track played again) replays the performance from step 0 (a new
`take` of the same segment) up to it. Each frame shown is frame n of the recorded render.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..base.errors import RenderError
from ..base.inputs import excerpt
from ..formats.contract import Frame
from ..look.colour import make_colourist
from ..look.layers import layer_map, needs_agents
from ..out.frames import FramePipeline
from ..out.sinks import FrameQueue, StopRender
from ..run.machine import check_memory, resolve_backend, resolve_device, share_cpu_with_encoders
from ..sim.course import Course
from ..sim.keyframes import KeyframedSimulation
from ..sim.simulation import make_batch_simulation
from .record import Performance

SHOWN_FRAMES = 2  # frames queued for the page: few, so that a change shows soon


@dataclass(frozen=True)
class Shown:
    """A frame for the page: its performance (segment), number, the step it was taken after and
    its exact RGB frame [H, W, 3] uint8."""

    segment: int
    number: int
    step: int
    rgb: np.ndarray
    take: int = 0  # the replay of the segment (a seek back of the audio clock starts one)


class ShownFrames(FrameQueue):
    """The live loop's sink: each frame's RGB, with its segment and step, into a bounded queue for
    the page's sender (out/sinks.py FrameQueue: the loop waits while it is full; stop() ends it)."""

    def __init__(self, size: int = SHOWN_FRAMES):
        super().__init__("rgb", size, replays=False)
        self.segment, self.course, self.take = 0, None, 0

    def write(self, frame: Frame) -> None:
        step = self.course.frame_end(frame.number)
        self._put(Shown(self.segment, frame.number, step, frame.rgb.copy(), self.take))


class LiveSession:
    """A performance played live. Thread-safe calls: change (validated at once, applied at the
    next step), restart, pause, resume, step, close; `frames` gives the frames (get()).
    on_event(dict) is called from the loop's thread: {"type": "applied", changes}, {"type":
    "problem", problems}, {"type": "segment", ...} at each (re)start, {"type": "failed", message}."""

    def __init__(
        self,
        performance: Performance,
        backend: str = "auto",
        device: str | None = None,
        on_event: Callable[[dict], None] | None = None,
        size: int = SHOWN_FRAMES,
    ):
        self.performance, self.backend, self.device = performance, backend, device
        self.on_event = on_event or (lambda event: None)
        self.frames = ShownFrames(size)
        self.lock = threading.Condition()
        self.pending: list[tuple[str, float]] = []
        self.restarting = False  # a restart asked for: the loop starts self.performance anew
        self.paused, self.steps_wanted, self.stopping = False, 0, False
        self.segment, self.number, self.step = 0, 0, 0
        self.take, self.replaying = 0, False
        self.clock = clock_of(performance)  # (fps, frames) where a sound file sets the pace
        self.target = 0  # clock mode: the frame the page's audio clock stands at
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="physarum-live", daemon=True)

    def start(self) -> LiveSession:
        self.thread.start()
        return self

    # ----------------------------------------------------------------------- calls of the page

    def change(self, key: str, value) -> None:
        """Queue a change for the next step; PresetError at once where it is refused."""
        with self.lock:
            self.performance.check(key, value, self.step, self.number)
            self.pending.append((key, value))
            self.lock.notify_all()

    def restart(self, settings: dict) -> None:
        """Start a new performance from step 0 with `settings` (restart keys, seed) over this one's
        latest values; PresetError at once where refused."""
        with self.lock:
            self.pending.clear()
            self.performance = self.performance.restarted(settings)
            self.segment += 1
            self.restarting, self.take, self.target = True, 0, 0
            self.lock.notify_all()

    def follow_clock(self, seconds) -> int:
        """Clock mode: the page's audio stands at `seconds`; show frame floor(seconds x fps)
        (within the run's frames). Returns that frame; ValueError where there is no clock or
        `seconds` is no finite number of at least 0."""
        if self.clock is None:
            raise ValueError("this preset has no sound file to follow")
        target = clock_frame(seconds, *self.clock)
        with self.lock:
            self.target = target
            self.lock.notify_all()
        return target

    def pause(self) -> None:
        with self.lock:
            self.paused, self.steps_wanted = True, 0

    def resume(self) -> None:
        with self.lock:
            self.paused = False
            self.lock.notify_all()

    def step_once(self) -> None:
        """While paused: take one more frame."""
        with self.lock:
            self.steps_wanted += 1
            self.lock.notify_all()

    def close(self) -> None:
        """Stop the loop and wait for its thread."""
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        self.frames.stop()
        if self.thread.is_alive():
            self.thread.join()

    def snapshot(self) -> tuple[int, Performance]:
        """(segment, performance) now, read together."""
        with self.lock:
            return self.segment, self.performance

    # ----------------------------------------------------------------------- the loop's thread

    def _run(self) -> None:
        try:
            while not self.stopping:
                self._play()
        except StopRender:
            pass
        except BaseException as error:  # the page says why the loop stopped
            self.error = error
            self.on_event({"type": "failed", "message": str(error) or type(error).__name__})
        finally:
            self.frames.close(None)

    def _play(self) -> None:
        """Play the current performance until a restart, a replay or the end."""
        with self.lock:
            replay, self.restarting, self.replaying = self.replaying, False, False
            performance, segment = self.performance, self.segment
            self.number = 0
        preset = performance.preset
        device = resolve_device(self.device)
        if device.type == "cpu":  # as a render does: half the cores left to the frames' encoding
            share_cpu_with_encoders()
        backend = resolve_backend(self.backend, device)
        check_memory(preset, backend, device)
        simulation = make_batch_simulation([preset], backend, device)
        if not isinstance(simulation, KeyframedSimulation):
            simulation = KeyframedSimulation(simulation, [preset], 0)
        course = Course(preset.run)
        course.advance_to(simulation, course.warmup_end)
        self.frames.segment, self.frames.course, self.frames.take = segment, course, self.take
        pipeline = FramePipeline(preset, make_colourist(preset), [self.frames], device, preset.frames)
        agents = needs_agents([preset])
        with self.lock:
            self.step = course.step
        event = self._segment_event(segment, performance)
        self.on_event({**event, "type": "replay", "take": self.take} if replay else event)
        number = 0
        while True:
            with self.lock:
                while not self._may_step():
                    self.lock.wait(0.5)
                if self.stopping or self.restarting:
                    return
                if self.clock is not None and self.target < number - 1:  # the clock went back
                    self.replaying, self.take = True, self.take + 1
                    return
                if self.paused and self.clock is None:
                    self.steps_wanted -= 1
                pending, self.pending = self.pending, []
                taken = number if self.clock is None else self.target
            if pending:
                self._apply(performance, pending, simulation, pipeline, course.step, taken)
            if course.frame_end(taken) <= course.step:
                raise RenderError(f"{preset.name}: the live run reached its last step ({course.step})")
            course.advance_to(simulation, course.frame_end(taken))
            pipeline.submit(
                taken, layer_map(preset, simulation.trail, simulation.agents if agents else None, 0)
            )
            pipeline.hand_over()
            number = taken + 1
            with self.lock:
                self.number, self.step = number, course.step

    def _may_step(self) -> bool:
        if self.stopping or self.restarting:
            return True
        if self.clock is not None:  # the audio clock moved off the frame last shown
            return self.target != self.number - 1
        return not self.paused or self.steps_wanted > 0

    def _apply(self, performance: Performance, pending, simulation, pipeline, step: int, number: int) -> None:
        """The changes made at `step` (before frame `number`'s steps): the simulation follows the
        grown schedules; a look change recolours from this frame on."""
        with self.lock:
            made, problems = performance.apply(pending, step, number)
        if made:
            simulation.follow([performance.preset])
            if any(change.key.startswith("look.") for change in made):
                pipeline.colourist = make_colourist(performance.preset)
            self.on_event({"type": "applied", "changes": [change.data() for change in made]})
        if problems:
            self.on_event({"type": "problem", "problems": problems})

    def _segment_event(self, segment: int, performance: Performance) -> dict:
        preset = performance.preset
        return {
            "type": "segment",
            "segment": segment,
            "name": preset.name,
            "width": preset.canvas.width,
            "height": preset.canvas.height,
            "steps_per_frame": preset.run.steps_per_frame,
            "warmup": preset.run.warmup,
            "fps": preset.output.fps,
            "frames": preset.frames,
            "changes": [change.data() for change in performance.changes],
        }


def clock_of(performance: Performance) -> tuple[int, int] | None:
    """(fps, frames) of a performance whose preset has a sound file (the page's audio clock
    sets its pace); None for one that runs freely."""
    preset = performance.preset
    if preset.audio is None or preset.audio.path is None:
        return None
    return preset.output.fps, preset.frames


def clock_frame(seconds, fps: int, frames: int) -> int:
    """The frame an audio clock at `seconds` shows: floor(seconds x fps), exact (the float's own
    value), within 0 .. frames - 1; ValueError where `seconds` is no finite number >= 0."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise ValueError(f"a time in seconds is a finite number, not {excerpt(seconds)}")
    if seconds < 0:
        raise ValueError(f"a time in seconds is at least 0, not {seconds}")
    return min(frames - 1, math.floor(Fraction(seconds) * fps))
