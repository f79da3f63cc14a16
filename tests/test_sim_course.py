"""The course of a render's steps: frame ends, frames taken by a step, and stops on the way."""

from __future__ import annotations

import pytest

from physarum.render.preset import Run
from physarum.render.sim.course import Course, frames_before


class Recorder:
    """A stand-in simulation that records how far each advance goes."""

    def __init__(self):
        self.advances: list[int] = []

    def advance(self, steps: int) -> None:
        self.advances.append(steps)


class Stop:
    def __init__(self, steps, seen):
        self.steps, self.seen = frozenset(steps), seen

    def __call__(self, simulation, step):
        self.seen.append((step, sum(simulation.advances)))


RUNS = [Run(steps=10, steps_per_frame=3), Run(steps=9, steps_per_frame=3, warmup=4), Run(steps=1)]


@pytest.mark.parametrize("run", RUNS)
def test_frames_before_counts_the_frames_whose_end_is_reached(run):
    course = Course(run)
    frames = -(-run.steps // run.steps_per_frame)
    ends = [course.frame_end(f) for f in range(frames)]
    assert ends[-1] == run.warmup + run.steps and ends == sorted(set(ends))
    for step in range(run.warmup + run.steps + 1):
        assert frames_before(run, step) == sum(end <= step for end in ends)


def test_advancing_stops_at_every_stop_in_order_and_ends_where_asked():
    seen: list = []
    run = Run(steps=12, steps_per_frame=4, warmup=2)
    course = Course(run, start=3, stops=[Stop({2, 5, 9}, seen), Stop({9, 14}, seen)])
    simulation = Recorder()
    assert course.first_frame == 0
    for frame in range(course.first_frame, 3):
        course.advance_to(simulation, course.frame_end(frame))
    assert course.step == 14 and sum(simulation.advances) == 14 - 3
    # at each stop, the simulation stands at the stop's step (step 2, before the start, never comes)
    assert seen == [(5, 2), (9, 6), (9, 6), (14, 11)]


@pytest.mark.parametrize("run", RUNS)
def test_a_journals_count_may_start_at_the_frame_taken_at_the_start_and_no_earlier(run):
    # a checkpoint at frame f's step records the frames before f: f is taken from its state
    for start in range(1, run.warmup + run.steps):
        course = Course(run, start=start)
        ends_here = [f for f in range(course.first_frame) if course.frame_end(f) == start]
        for first in ends_here:
            assert Course(run, start=start, first=first).first_frame == first
        too_early = [f for f in range(course.first_frame) if course.frame_end(f) < start]
        for first in too_early:
            with pytest.raises(ValueError):
                Course(run, start=start, first=first)
        assert len(ends_here) <= 1 and len(ends_here) + len(too_early) == course.first_frame


def test_a_signal_stops_a_long_warmup_within_a_chunk(monkeypatch):
    from physarum.render.base import interrupts
    from physarum.render.sim.course import CHUNK_STEPS

    course, simulation = Course(Run(steps=10, steps_per_frame=2, warmup=1000)), Recorder()
    calls = []

    def signalled():
        calls.append(1)
        if len(calls) == 3:  # a SIGTERM arrives during the second chunk
            raise interrupts.Terminated(15)

    monkeypatch.setattr("physarum.render.sim.course.stop_if_requested", signalled)
    with pytest.raises(interrupts.Terminated):
        course.advance_to(simulation, course.warmup_end)
    assert simulation.advances == [CHUNK_STEPS, CHUNK_STEPS]  # not the whole warmup at once


def test_chunks_leave_the_steps_taken_unchanged():
    course, simulation = Course(Run(steps=10, steps_per_frame=2, warmup=250)), Recorder()
    course.advance_to(simulation, course.frame_end(2))
    assert sum(simulation.advances) == 256 and max(simulation.advances) <= 100
