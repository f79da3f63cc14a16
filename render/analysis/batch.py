"""Running twins: every point's base and twins as batched simulations, in chunks of whole points
that fit the device's memory, recording each step's divergence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from ...kernels import get_backend
from ...kernels.api import State, Tables
from ...kernels.exact import build_tables
from ...kernels.spawn import spawn
from ..preset import Preset
from ..run.machine import available_bytes, estimated_bytes, limit_cpu_threads
from .errors import AnalysisError
from .metrics import TwinSeries, divergence
from .twins import (
    LOOKAHEAD_STEPS,
    PERTURBING_KINDS,
    Twin,
    agent_positions,
    choose_agent_twins,
    choose_trail_twins,
    perturb,
)

MEMORY_SHARE = 0.5  # of the free device memory a chunk of plane points may plan to use
MIN_AGENTS = 2  # the decorrelated distance compares each agent with one half the agents away


@dataclass
class RunOptions:
    """How twins run; the same for every point of a plane."""

    steps: int = 200  # steps recorded after the perturbation
    at: int = 1  # the step whose state is perturbed (the trail must be nonzero: at >= 1)
    twins: Sequence[str] = PERTURBING_KINDS * 4  # the kinds of the twins of each point
    backend: str = "torch"  # a resolved backend name
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    lookahead: int = LOOKAHEAD_STEPS  # steps searched for agent twins (choose_agent_twins)
    quiet: bool = True  # no progress bar


def _simulation(state: State, tables: Tables, backend: str, device: torch.device):
    """The backend's simulation of `state` on `device`."""
    return get_backend(backend)(state, tables, device=device)


def _repeat_tables(tables: Tables, times: int) -> Tables:
    """Each simulation's tables repeated `times` times in a row: one copy per base and twin."""
    return Tables(**{name: value.repeat_interleave(times, dim=0) for name, value in tables.__dict__.items()})


def _spawn_points(preset: Preset, points: int) -> State:
    """The preset's initial state, spawned once and repeated for `points` simulations (the
    points of a plane share canvas, agents and seed, so they spawn alike)."""
    state = spawn(
        [preset.seed],
        preset.agents.count,
        preset.canvas.width,
        preset.canvas.height,
        preset.agents.spawn,
        preset.agents.radius,
    )
    return State(
        state.position.repeat(points, 1, 1),
        state.heading.repeat(points, 1),
        state.trail.repeat(points, 1, 1),
        state.step,
    )


def _choose_twins(base, at_state: State, tables: Tables, options: RunOptions, seed: int) -> list[list[Twin]]:
    """Each point's twins, in the order of options.twins: trail twins chosen at `at_state`, agent
    twins by the look-ahead, which advances `base` (no longer needed after)."""
    kinds = list(options.twins)
    points = at_state.batch
    wanted = {kind: kinds.count(kind) for kind in PERTURBING_KINDS}
    chosen = {kind: [[] for _ in range(points)] for kind in wanted}
    if wanted["trail"]:
        chosen["trail"] = choose_trail_twins(at_state, tables, wanted["trail"], seed)
    if wanted["agent"]:
        chosen["agent"] = choose_agent_twins(base, wanted["agent"], seed, options.lookahead)
    twins = []
    for p in range(points):
        queues = {kind: list(chosen[kind][p]) for kind in chosen}
        twins.append([queues[k].pop(0) if k in queues else Twin("none") for k in kinds])
    return twins


def _chunk_twins(presets: Sequence[Preset], options: RunOptions) -> tuple[State, Tables, list[list[Twin]]]:
    """The perturbed batch of a chunk of points, [base, twin 1, ...] for each point in turn, its
    tables and the twins: the base runs to step `at`, the twins are chosen and perturbed there."""
    first, device, backend = presets[0], options.device, options.backend
    tables = build_tables([p.model_params() for p in presets], device=device)
    base = _simulation(_spawn_points(first, len(presets)), tables, backend, device)
    base.advance(options.at)
    at_state = base.state.clone()  # the reference's state is replaced, not changed, by steps
    twins = _choose_twins(base, at_state, tables, options, first.seed)
    del base
    batch = State.concat(
        [
            perturb(
                State(
                    at_state.position[p : p + 1],
                    at_state.heading[p : p + 1],
                    at_state.trail[p : p + 1],
                    at_state.step,
                ),
                point_twins,
            )
            for p, point_twins in enumerate(twins)
        ]
    )
    return batch, _repeat_tables(tables, 1 + len(options.twins)), twins


def check_twins(preset: Preset, options: RunOptions) -> None:
    """AnalysisError, before anything runs, where the preset has too few agents for the twins:
    each agent twin shifts a different agent, and the decorrelated agent distance needs at least
    MIN_AGENTS agents (one agent compared with itself would read 0, not "unrelated")."""
    agents, wanted = preset.agents.count, max(MIN_AGENTS, list(options.twins).count("agent"))
    if agents < wanted:
        raise AnalysisError(
            f"{preset.name}: agents.count {agents} is too few for {len(options.twins)} twins "
            f"(each agent twin shifts a different agent, and unrelated runs are compared agent to "
            f"agent); give agents.count of at least {wanted}, or fewer --twins"
        )


def run_twins(presets: Sequence[Preset], options: RunOptions) -> TwinSeries:
    """Base and twins of every preset (one plane point each; all share canvas, agents and seed)
    as batched simulations of whole points, chunked to fit the device's memory; AnalysisError
    first where the agents are too few (check_twins)."""
    check_twins(presets[0], options)
    if torch.device(options.device).type == "cpu":
        limit_cpu_threads()
    group = 1 + len(options.twins)
    per_chunk = points_per_chunk(presets[0], options.backend, options.device, group)
    parts, twins = [], []
    chunks = [presets[i : i + per_chunk] for i in range(0, len(presets), per_chunk)]
    with tqdm(
        total=len(chunks) * options.steps,
        unit="step",
        disable=options.quiet,
        leave=False,
        desc=f"{presets[0].name}: {len(presets) * group} simulations",
        dynamic_ncols=True,
    ) as bar:
        for chunk in chunks:
            state, tables, chunk_twins = _chunk_twins(chunk, options)
            simulation = _simulation(state, tables, options.backend, options.device)
            rows = [divergence(simulation.trail, agent_positions(simulation), group)]
            for _ in range(options.steps):
                simulation.advance(1)
                rows.append(divergence(simulation.trail, agent_positions(simulation), group))
                bar.update(1)
            parts.append(
                (
                    torch.stack([r[0] for r in rows], dim=2).cpu().numpy(),
                    torch.stack([r[1] for r in rows], dim=1).cpu().numpy(),
                )
            )
            twins += chunk_twins
            del simulation
    steps = np.arange(options.at, options.at + options.steps + 1)
    return TwinSeries(
        steps, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), twins
    )


def points_per_chunk(preset: Preset, backend: str, device: torch.device, group: int) -> int:
    """Plane points (each `group` simulations) that fit in MEMORY_SHARE of the free memory, with
    the divergence's temporaries (float64 copies of the maps, int64 agent differences)."""
    cells, agents = preset.canvas.width * preset.canvas.height, preset.agents.count
    per_point = estimated_bytes(preset, backend, batch=group) + group * (cells * 40 + agents * 40)
    budget = int(available_bytes(device) * MEMORY_SHARE)
    if per_point > budget:
        raise AnalysisError(
            f"{preset.name}: one point of {group} simulations needs about "
            f"{per_point / 2**30:.1f} GiB on {device} but {budget / 2**30:.1f} GiB "
            "may be used; ask for fewer --twins or a smaller canvas"
        )
    return max(1, min(budget // per_point, 65535 // group))
