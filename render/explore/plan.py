"""An explore's plan: its options checked against their bounds, the explored preset made ready
(its canvas, run and outputs), each candidate's preset, and the cost said before it starts.

The explored preset is brought to `size` pixels on its short side by render/preset/reduce.py (the
same picture smaller: agents at the same density, distances scaled; never enlarged), runs
`steps` steps without warmup in about FRAMES frames (the metrics' rows), and writes a PNG still
alone (no loop, no checkpoints, no raw fields). A candidate is that preset with mutated model
values, a name of its own and a description saying where it came from: an ordinary preset,
which `physarum render` renders to the same PNG.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..base.errors import RenderError
from ..preset import Preset
from ..preset.load import build_preset
from ..preset.reduce import reduce_preset, side_ratio
from ..run.estimate import render_seconds

FRAMES = 24  # frames (metric rows) of a candidate's run, about
DEFAULT_KEEP = 12
MAX_ROUNDS = 50
MAX_POPULATION = 1024
MAX_CANDIDATES = 8192
MIN_SIZE, MAX_SIZE = 16, 4096
MAX_STEPS = 100_000
CONFIRM_S = 600.0  # an estimate at or above this needs --yes


@dataclass
class ExploreOptions:
    """What an explore does (the flags of `physarum explore`)."""

    rounds: int = 2
    population: int = 24
    keep: int | None = None  # None: DEFAULT_KEEP, or every candidate where there are fewer
    size: int = 256
    steps: int | None = None  # None: the preset's run.steps
    seed: int = 1
    backend: str = "auto"
    device: str | None = None
    out: Path = Path("outputs")
    yes: bool = False
    quiet: bool = False

    @property
    def candidates(self) -> int:
        return self.rounds * self.population

    @property
    def keep_count(self) -> int:
        return self.keep if self.keep is not None else min(DEFAULT_KEEP, self.candidates)

    def arguments(self) -> dict:
        """What decides the candidates and their pictures (a resumed run must match them)."""
        return {
            "rounds": self.rounds,
            "population": self.population,
            "size": self.size,
            "steps": self.steps,
            "seed": self.seed,
        }


def _bounded(flag: str, value: int, low: int, high: int) -> str | None:
    if low <= value <= high:
        return None
    return f"{flag} must be a whole number from {low:,} to {high:,} (got {value:,})"


def check_options(options: ExploreOptions) -> None:
    """RenderError naming every flag out of its bounds (an unbounded job is refused)."""
    problems = [
        _bounded("--rounds", options.rounds, 1, MAX_ROUNDS),
        _bounded("--population", options.population, 2, MAX_POPULATION),
        _bounded("--size", options.size, MIN_SIZE, MAX_SIZE),
        _bounded("--seed", options.seed, 0, 2**32 - 1),
    ]
    if options.steps is not None:
        problems.append(_bounded("--steps", options.steps, 1, MAX_STEPS))
    if options.keep is not None:
        problems.append(_bounded("--keep", options.keep, 1, max(1, options.candidates)))
    if options.candidates > MAX_CANDIDATES:
        problems.append(
            f"--rounds x --population is {options.candidates:,} candidates; at most {MAX_CANDIDATES:,}"
        )
    problems = [p for p in problems if p]
    if problems:
        raise RenderError("\n".join(problems))


def explored_preset(preset: Preset, options: ExploreOptions) -> Preset:
    """The preset every candidate mutates (the module's rules); PresetError where it does not fit,
    RenderError for a 3D preset (the metrics read a 2D trail)."""
    if preset.dims != 2:
        raise RenderError(
            f"{preset.name}: explore searches 2D presets; this one is {preset.dims}D "
            "(canvas.depth): drop canvas.depth, or render its variations with a sweep"
        )
    reduced, _ = reduce_preset(preset, side_ratio(preset, options.size), "explore")
    data = reduced.model_dump(mode="json")
    steps = options.steps or preset.run.steps
    data["run"] = {"steps": steps, "steps_per_frame": max(1, steps // FRAMES), "warmup": 0}
    data["output"] = {**data["output"], "formats": ["png"], "loop_mode": "none", "fields": None}
    data["output"].pop("loop_frames", None)
    data["checkpoint"] = None
    return build_preset(data, f"explore of {preset.name}", base=".", carried=preset.carried)


def candidate_preset(explored: Preset, values: dict[str, float], name: str, origin: str) -> Preset:
    """The explored preset with these model values, named `name`, its description `origin`."""
    data = explored.model_dump(mode="json")
    data["model"] = {**data["model"], **values}
    data["name"], data["description"] = name, origin
    return build_preset(data, name, base=".", carried=explored.carried)


# A candidate's own work beside its simulation, on the host: its preset built and checked, its
# writers opened and its PNG written (CANDIDATE_S), and each frame's colouring and metrics
# (FRAME_S, FRAME_CELL_S a canvas cell). Measured on the 2-core CPU (torch, load 6 to 11: errs
# long): quickstart at 64^2 and 192^2 for 24 steps (24 frames) took 0.70 and 0.94 s a candidate
# beside its simulation, at 96^2 for 60 steps (30 frames) 0.84 s.
CANDIDATE_S = 0.3
FRAME_S = 0.015
FRAME_CELL_S = 3e-7


def candidate_seconds(explored: Preset, device_type: str, backend: str) -> float | None:
    """The estimated seconds of one candidate: its simulation (run/estimate.py, which errs long
    for batches) and its own work (CANDIDATE_S, FRAME_S, FRAME_CELL_S); None for a machine the
    estimate does not know."""
    seconds = render_seconds(explored, device_type, backend)
    if seconds is None:
        return None
    cells = explored.canvas.width * explored.canvas.height * explored.species_count
    return seconds + CANDIDATE_S + explored.frames * (FRAME_S + cells * FRAME_CELL_S)


def cost_lines(explored: Preset, options: ExploreOptions, device_type: str, backend: str) -> list[str]:
    """What the explore will cost: candidates, agent-steps, the estimated time (each candidate's
    simulation and its own work, candidate_seconds)."""
    agent_steps = options.candidates * explored.agents.count * explored.end_step
    seconds = candidate_seconds(explored, device_type, backend)
    shown = "unknown" if seconds is None else _duration(seconds * options.candidates)
    return [
        f"explore {explored.name}: {options.rounds} rounds x {options.population} = "
        f"{options.candidates:,} candidates of {explored.canvas.width}x{explored.canvas.height}, "
        f"{explored.agents.count:,} agents, {explored.end_step:,} steps",
        f"cost: {agent_steps:.3g} agent-steps, estimated at about {shown} on this {device_type} ({backend})",
    ]


def check_cost(explored: Preset, options: ExploreOptions, device_type: str, backend: str) -> None:
    """RenderError for an explore estimated at CONFIRM_S or more without --yes."""
    seconds = candidate_seconds(explored, device_type, backend)
    if options.yes or seconds is None or seconds * options.candidates < CONFIRM_S:
        return
    raise RenderError(
        f"explore: estimated at about {_duration(seconds * options.candidates)} "
        f"(over {_duration(CONFIRM_S)}); add --yes to start it, or lower --rounds, --population, "
        "--size or --steps"
    )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"
