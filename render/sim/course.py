"""The course of a render's steps: after which step each frame is taken, and where the render
stops between frames to write a checkpoint or raw fields.

Step s names the state after s steps (0: as spawned). The warmup's w steps come first; frame f
is taken after step frame_end(f) = w + min((f + 1) * steps_per_frame, steps). A render that
starts from a checkpoint of step s takes exactly the frames whose end lies after s, with their
own numbers, so that each frame (and its palette, chosen by its number) is the one the
uninterrupted render takes. A render that re-feeds the frames of a checkpoint's journal
(render/out/journal.py) takes its frames from the journal's count on: a checkpoint at frame f's
step records the frames before f (it is written before frame f is taken), so frame f is then
taken from the checkpoint's own state.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Protocol

from ..base.interrupts import stop_if_requested
from ..preset import Run
from .simulation import advance

CHUNK_STEPS = 100  # steps between looks for a signal in a long advance (a warmup): the same bits


def frames_before(run: Run, step: int) -> int:
    """How many frames a render takes at or before `step` (the number of the next frame)."""
    simulated = step - run.warmup
    if simulated >= run.steps:
        return -(-run.steps // run.steps_per_frame)  # all, the last one perhaps shorter
    return max(0, simulated // run.steps_per_frame)


class Stop(Protocol):
    """Something a render does between steps: at each of its `steps`, called with the
    simulation and the step (on a batch, the whole batch's simulation)."""

    steps: frozenset[int]

    def __call__(self, simulation, step: int) -> None: ...


class Course:
    """Where a render's simulation stands (`step`) and where it goes next.

    start: the step the simulation starts at (0, or a checkpoint's step); stops: what to do at
    chosen steps on the way (Stop); first: the number of the first frame to take (None: the
    first whose step lies after `start`; a journal's count, which may be one less when `start`
    is that frame's step). Advancing never crosses a stop's step without stopping there.
    """

    def __init__(self, run: Run, start: int = 0, stops: Sequence[Stop] = (), first: int | None = None):
        self.run, self.start, self.step = run, start, start
        self.first = frames_before(run, start) if first is None else first
        if self.first < frames_before(run, start) and self.frame_end(self.first) < start:
            raise ValueError(f"frame {self.first} was taken before step {start}")
        self.stops = [stop for stop in stops if stop.steps]
        self.stop_steps = sorted(set().union(*(stop.steps for stop in self.stops)))

    @property
    def chunk(self) -> int:
        """The most steps advanced without looking for a signal: a frame's, or CHUNK_STEPS."""
        return max(self.run.steps_per_frame, CHUNK_STEPS)

    @property
    def warmup_end(self) -> int:
        return self.run.warmup

    def frame_end(self, frame: int) -> int:
        """The step after which frame number `frame` is taken."""
        return self.run.warmup + min((frame + 1) * self.run.steps_per_frame, self.run.steps)

    @property
    def first_frame(self) -> int:
        """The number of the first frame this render takes (after `start`, or at it)."""
        return self.first

    def advance_to(self, simulation, step: int, on_step: Callable[[object], None] | None = None) -> None:
        """Advance the simulation to `step`, stopping at every stop's steps on the way (after
        the step, before anything later)."""
        while self.step < step:
            stop_if_requested()  # SIGTERM in a long warmup: within one chunk, not at the first frame
            later = bisect.bisect_right(self.stop_steps, self.step)
            reach = min([step, *self.stop_steps[later : later + 1], self.step + self.chunk])
            advance(simulation, reach - self.step, on_step)
            self.step = reach
            for stop in self.stops:
                if reach in stop.steps:
                    stop(simulation, reach)
