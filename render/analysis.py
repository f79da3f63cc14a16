"""`physarum sensitivity`: how fast the smallest possible perturbations grow, measured exactly.

A run is a base simulation and twins that differ from it by one perturbation each, all advanced
as one batched simulation (B = points x (1 + twins)); the model is batch-independent and exact,
so any difference between a twin and its base comes from the perturbation and nothing else.
docs/sensitivity.md gives the method, the rules and their reasons; in short:

- an *agent* twin has one agent moved by one 16.16 unit in x (1/65536 px); a one-unit shift only
  matters when it takes the agent across a cell boundary, so the agent is chosen among those that
  do within a short look-ahead of the base run;
- a *trail* twin has one trail cell raised to the next trail value: one float32 ulp up
  (torch.nextafter), or from 0 to TRAIL_FLOOR, the smallest value the model keeps; that only
  matters when it breaks a tie in some agent's steering, so the cell is chosen among those that
  change a sensing agent's turn at the next step (a "decisive" cell);
- per step, each twin's divergence from its base: the normalised L1 distance of the trails, their
  Pearson correlation, and the mean torus distance of same-index agents;
- a finite-time Lyapunov exponent: the slope of ln(L1) over the exponential window, which opens
  when the divergence first exceeds its initial value and closes when it reaches
  WINDOW_FRACTION of the decorrelated level (the L1 distance between the base and itself shifted
  by half the canvas); mean and standard error over twins;
- the saturation step: the first step at which the divergence reaches SATURATION_LEVEL of its
  plateau (the mean of the last fifth of the run), when the run has one (it grew less than
  PLATEAU_GROWTH across that last fifth).

Planes (`--plane KEY=LO:HI:N KEY=LO:HI:N`) measure the exponent over a grid of two model
parameters and compare it with the seed's linearised 2x2 model (`LinearModel`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from physarum.kernels import get_backend
from physarum.kernels.api import (
    FRAC_BITS,
    HEADING_MASK,
    ONE,
    TRAIL_FLOOR,
    State,
    Tables,
)
from physarum.kernels.exact import build_tables, turn_bits
from physarum.kernels.spawn import spawn
from physarum.render.errors import RenderError, did_you_mean
from physarum.render.files import PartialFile, write_csv, write_json
from physarum.render.machine import available_bytes, estimated_bytes
from physarum.render.preset import Model, Preset, PresetError, build_preset
from physarum.render.runner import embedded_text, version

KINDS = ("agent", "trail", "none")  # "none": an unperturbed twin, the batch's own control
WINDOW_FRACTION = 1e-2  # the exponential window closes at this share of the decorrelated level
SATURATION_LEVEL = 0.9  # saturation: the first step at this share of the plateau
PLATEAU_GROWTH = 1.05  # a plateau grows less than this factor across the run's last fifth
MIN_FIT_POINTS = 3
LOOKAHEAD_STEPS = 64  # steps of the base searched for agents that cross a cell boundary
MEMORY_SHARE = 0.5  # of the free device memory a chunk of plane points may plan to use
GROWTH_THRESHOLD = 0.0  # per step: a plane point above it counts as unstable (--threshold)
PLANE_KEYS = tuple(f"model.{name}" for name in Model.model_fields)
METRICS = ("trail_l1", "trail_correlation", "agent_distance_px")


class AnalysisError(RenderError):
    """Bad input to `physarum sensitivity` (exit code 2, nothing written)."""


# ---------------------------------------------------------------------------------------------
# Twins: which agent or cell each one perturbs


@dataclass(frozen=True)
class Twin:
    """One twin's perturbation: an agent index, a flat cell index (y * W + x), or none (-1).

    found: the agent crosses a cell boundary within the look-ahead, or the cell is decisive; a
    twin that is not found was filled in at random and its perturbation may stay silent.
    """

    kind: str
    target: int = -1
    found: bool = True

    def describe(self, width: int) -> str:
        if self.kind == "agent":
            return f"agent {self.target}"
        if self.kind == "trail":
            return f"cell ({self.target % width}, {self.target // width})"
        return "none"


def twin_kinds(twins: int, kinds: Sequence[str] = ("agent", "trail")) -> list[str]:
    """The kinds of `twins` twins, taking turns: agent, trail, agent, trail, ..."""
    return [kinds[i % len(kinds)] for i in range(twins)]


def _turn_sign(readings: torch.Tensor, turn_plus: torch.Tensor) -> torch.Tensor:
    """[B, N] int8 turn of each agent (-1, 0, +1) from readings [B, 3, N] (F, L, R) and its random
    turn direction [B, N] bool, by the steering rule of docs/model.md section 6.2."""
    forward, left, right = readings.unbind(1)
    side = (right > left).to(torch.int8) - (left > right).to(torch.int8)
    random = torch.where(turn_plus, 1, -1).to(torch.int8)
    sign = torch.where((left > forward) & (right > forward), random, side)
    return torch.where((forward > left) & (forward > right), 0, sign).to(torch.int8)


def sensor_cells(state: State, tables: Tables) -> torch.Tensor:
    """[B, 3, N] int64 flat cell (y * W + x) of each agent's forward, left and right sensors."""
    batch, height, width = state.batch, state.height, state.width
    heading = state.heading.to(torch.int64)
    turn = tables.sensor_turn.to(torch.int64)[:, None]
    headings = torch.stack(
        [heading, (heading - turn) & HEADING_MASK, (heading + turn) & HEADING_MASK], dim=1
    )  # [B, 3, N]
    rows = torch.arange(batch, device=heading.device)[:, None, None]
    offset = tables.sense_offset.to(torch.int64)[rows, headings]  # [B, 3, N, 2]
    x = (state.position[:, 0, None, :].to(torch.int64) + offset[..., 0]) >> FRAC_BITS
    y = (state.position[:, 1, None, :].to(torch.int64) + offset[..., 1]) >> FRAC_BITS
    return torch.remainder(y, height) * width + torch.remainder(x, width)


def raise_trail(values: torch.Tensor) -> torch.Tensor:
    """The next trail value up: the next float32 above a positive value, TRAIL_FLOOR above 0
    (the model holds no value between 0 and TRAIL_FLOOR: smaller ones are flushed to 0)."""
    return torch.where(
        values > 0,
        torch.nextafter(values, torch.full_like(values, math.inf)),
        torch.full_like(values, TRAIL_FLOOR),
    )


def decisive_cells(state: State, tables: Tables) -> list[torch.Tensor]:
    """For each simulation, the sorted cells whose raise to the next trail value (raise_trail)
    changes the heading of at least one agent at the next step, so that the twin's agents part
    at once. [k] int64 each (none where turn_angle rounds to 0 heading steps)."""
    batch, agents = state.batch, state.agents
    cells = sensor_cells(state, tables)
    readings = state.trail.reshape(batch, -1).gather(1, cells.reshape(batch, -1))
    readings = readings.view(batch, 3, agents)
    turn_plus = turn_bits(tables.seed_key, state.step, agents)
    sign = _turn_sign(readings, turn_plus)
    raised = raise_trail(readings)
    turns = ((tables.turn & HEADING_MASK) != 0)[:, None]  # a turn of 0 changes no heading
    found = []
    for sensor in range(3):
        shared = cells == cells[:, sensor : sensor + 1]  # every sensor reading the same cell rises
        changed = _turn_sign(torch.where(shared, raised, readings), turn_plus) != sign
        found.append(torch.where(changed & turns, cells[:, sensor], -1))
    found = torch.stack(found, dim=1).reshape(batch, -1)
    return [torch.unique(row[row >= 0]) for row in found]


def _pick(candidates: torch.Tensor, wanted: int, generator: torch.Generator) -> list[int]:
    """`wanted` distinct values of a 1-D tensor, in a seeded random order (fewer if it is short)."""
    candidates = candidates.cpu()
    order = torch.randperm(len(candidates), generator=generator)[:wanted]
    return candidates[order].tolist()


def choose_trail_twins(state: State, tables: Tables, wanted: int, seed: int) -> list[list[Twin]]:
    """`wanted` trail twins per simulation of `state`: decisive cells first, then (if too few)
    random other cells, marked not found."""
    chosen = []
    cells_in_map = state.height * state.width
    for cells in decisive_cells(state, tables):
        generator = torch.Generator().manual_seed(seed)  # per point: chunking changes nothing
        twins = [Twin("trail", c) for c in _pick(cells, wanted, generator)]
        if len(twins) < wanted:
            every = torch.arange(cells_in_map, device=cells.device)
            spare = every[~torch.isin(every, cells)]
            twins += [Twin("trail", c, False) for c in _pick(spare, wanted - len(twins), generator)]
        chosen.append(twins)
    return chosen


def _positions(simulation) -> torch.Tensor:
    """[B, 2, N] positions of a simulation in spawn order (the Triton backend sorts its lanes)."""
    return simulation.state.position


def choose_agent_twins(simulation, wanted: int, seed: int, lookahead: int) -> list[list[Twin]]:
    """`wanted` agent twins per simulation: the first agents of the base run whose x stands one
    16.16 unit short of a cell boundary (fraction 0xFFFF) at a step of the look-ahead, so that
    the shifted twin deposits in the next cell then; advances `simulation` (a throwaway copy).
    Where the look-ahead finds too few, random agents fill in, marked not found."""
    batch, agents = simulation.trail.shape[0], simulation.state.position.shape[2]
    found: list[list[int]] = [[] for _ in range(batch)]
    for _ in range(lookahead):
        if all(len(f) >= wanted for f in found):
            break
        simulation.advance(1)
        hits = torch.nonzero((_positions(simulation)[:, 0] & (ONE - 1)) == ONE - 1).cpu().tolist()
        for b, agent in hits:
            if len(found[b]) < wanted and agent not in found[b]:
                found[b].append(agent)
    chosen = []
    for agents_found in found:
        generator = torch.Generator().manual_seed(seed)
        twins = [Twin("agent", a) for a in agents_found]
        if len(twins) < wanted:
            spare = torch.ones(agents, dtype=torch.bool)
            spare[agents_found] = False
            spare = torch.nonzero(spare).flatten()
            twins += [Twin("agent", a, False) for a in _pick(spare, wanted - len(twins), generator)]
        chosen.append(twins)
    return chosen


def perturb(state: State, twins: Sequence[Twin]) -> State:
    """A copy of `state` (B = 1) repeated for the base and each twin, each twin perturbed:
    [base, twin 1, twin 2, ...]. Agent: x + 1 (one 16.16 unit, wrapped); trail: next float32 up."""
    batch = 1 + len(twins)
    position = state.position.repeat(batch, 1, 1)
    heading = state.heading.repeat(batch, 1)
    trail = state.trail.repeat(batch, 1, 1)
    size = state.width << FRAC_BITS
    for b, twin in enumerate(twins, start=1):
        if twin.kind == "agent":
            position[b, 0, twin.target] = (position[b, 0, twin.target] + 1) % size
        elif twin.kind == "trail":
            trail[b].view(-1)[twin.target] = raise_trail(trail[b].view(-1)[twin.target])
    return State(position=position, heading=heading, trail=trail, step=state.step.clone())


# ---------------------------------------------------------------------------------------------
# Divergence of twins from their base


def divergence(trail: torch.Tensor, position: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each twin against its base, for a batch laid out as P groups of [base, twin, twin, ...].

    trail [P * group, H, W] float32, position [P * group, 2, N] int32 16.16.
    Returns ([P, group - 1, 3] float64: L1 / sum(base), Pearson correlation, mean torus distance
    of same-index agents in pixels) and ([P, 2] float64: the decorrelated levels of L1 and agent
    distance, the base against itself shifted by half the canvas and half the agents).
    """
    _, height, width = trail.shape
    trail = trail.reshape(-1, group, height, width)
    base, twins = trail[:, :1], trail[:, 1:]
    base_total = base.sum(dim=(-2, -1), dtype=torch.float64)
    l1 = (twins - base).abs().sum(dim=(-2, -1), dtype=torch.float64) / base_total
    correlation = _correlation(base.to(torch.float64), twins.to(torch.float64))
    position = position.reshape(-1, group, 2, position.shape[-1])
    sizes = torch.tensor([width, height], device=position.device)[:, None] << FRAC_BITS
    distance = _torus_distance(position[:, 1:], position[:, :1], sizes)
    shifted = base.roll((height // 2, width // 2), dims=(-2, -1))
    decorrelated_l1 = (shifted - base).abs().sum(dim=(-2, -1), dtype=torch.float64) / base_total
    agents = position.shape[-1]
    other = position[:, :1].roll(agents // 2, dims=-1)
    decorrelated_distance = _torus_distance(other, position[:, :1], sizes)
    return (
        torch.stack([l1, correlation, distance], dim=-1),
        torch.cat([decorrelated_l1, decorrelated_distance], dim=1),
    )


def _correlation(base: torch.Tensor, twins: torch.Tensor) -> torch.Tensor:
    """Pearson correlation over the last two dims, as 1 - mean((z_base - z_twin)^2) / 2 with z
    the standardised maps: exact to float64 rounding even for nearly identical maps."""

    def standardised(x):
        centred = x - x.mean(dim=(-2, -1), keepdim=True)
        spread = centred.square().mean(dim=(-2, -1), keepdim=True).sqrt()
        return centred / torch.where(spread > 0, spread, torch.nan)

    return 1 - (standardised(base) - standardised(twins)).square().mean(dim=(-2, -1)) / 2


def _torus_distance(a: torch.Tensor, b: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Mean over agents of the torus distance in pixels between 16.16 positions [..., 2, N]."""
    delta = torch.remainder((a - b).to(torch.int64), sizes)
    delta = torch.minimum(delta, sizes - delta).to(torch.float64) / ONE
    return torch.hypot(delta[..., 0, :], delta[..., 1, :]).mean(dim=-1)


@dataclass
class TwinSeries:
    """Per-step divergence of every twin of every point of a run.

    steps: [S + 1] the step numbers, from the perturbed state (step `at`) on.
    metrics: [P, K, S + 1, 3] float64, METRICS of each twin against its base at each step.
    decorrelated: [P, S + 1, 2] float64, the decorrelated L1 and agent distance of each base.
    twins: [P][K] the perturbations.
    """

    steps: np.ndarray
    metrics: np.ndarray
    decorrelated: np.ndarray
    twins: list[list[Twin]]


# ---------------------------------------------------------------------------------------------
# Running twins


@dataclass
class RunOptions:
    steps: int = 200
    at: int = 1  # the step whose state is perturbed (the trail must be nonzero: at >= 1)
    twins: Sequence[str] = ("agent", "trail") * 4  # the kinds of the twins of each point
    backend: str = "torch"  # a resolved backend name
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    lookahead: int = LOOKAHEAD_STEPS
    quiet: bool = True


def _simulation(state: State, tables: Tables, backend: str, device: torch.device):
    if backend == "triton":
        return get_backend(backend)(state, tables, device=device)
    return get_backend(backend)(state.to(device), tables)


def _repeat_tables(tables: Tables, times: int) -> Tables:
    return Tables(**{name: value.repeat_interleave(times, dim=0) for name, value in tables.__dict__.items()})


def _cat_states(states: Sequence[State]) -> State:
    return State(
        position=torch.cat([s.position for s in states]),
        heading=torch.cat([s.heading for s in states]),
        trail=torch.cat([s.trail for s in states]),
        step=states[0].step,
    )


def _chunk_twins(presets: Sequence[Preset], options: RunOptions) -> tuple[State, Tables, list[list[Twin]]]:
    """The perturbed batch of a chunk of points: the base run to step `at`, twins chosen there."""
    first, device, backend = presets[0], options.device, options.backend
    state = spawn(
        [first.seed],
        first.agents.count,
        first.canvas.width,
        first.canvas.height,
        first.agents.spawn,
        first.agents.radius,
    )
    points = len(presets)
    base_state = State(
        state.position.repeat(points, 1, 1),
        state.heading.repeat(points, 1),
        state.trail.repeat(points, 1, 1),
        state.step,
    )
    tables = build_tables([p.model_params() for p in presets], device=device)
    base = _simulation(base_state, tables, backend, device)
    base.advance(options.at)
    at_state = base.state.clone()  # the reference's state is replaced, not changed, by steps
    kinds = list(options.twins)
    wanted = {kind: kinds.count(kind) for kind in ("agent", "trail")}
    chosen = {kind: [[] for _ in presets] for kind in wanted}
    if wanted["trail"]:
        chosen["trail"] = choose_trail_twins(at_state, tables, wanted["trail"], first.seed)
    if wanted["agent"]:
        chosen["agent"] = choose_agent_twins(base, wanted["agent"], first.seed, options.lookahead)
    del base
    twins = []
    for p in range(points):
        queues = {kind: list(chosen[kind][p]) for kind in chosen}
        twins.append([queues[k].pop(0) if k in queues else Twin("none") for k in kinds])
    batch = _cat_states(
        [
            perturb(
                State(
                    at_state.position[p : p + 1],
                    at_state.heading[p : p + 1],
                    at_state.trail[p : p + 1],
                    at_state.step,
                ),
                twins[p],
            )
            for p in range(points)
        ]
    )
    return batch, _repeat_tables(tables, 1 + len(kinds)), twins


def run_twins(presets: Sequence[Preset], options: RunOptions) -> TwinSeries:
    """Base and twins of every preset (one plane point each; all share canvas, agents and seed)
    as batched simulations of whole points, chunked to fit the device's memory."""
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
            rows = [divergence(simulation.trail, _positions(simulation), group)]
            for _ in range(options.steps):
                simulation.advance(1)
                rows.append(divergence(simulation.trail, _positions(simulation), group))
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


# ---------------------------------------------------------------------------------------------
# Fitting: finite-time Lyapunov exponents and saturation


@dataclass(frozen=True)
class ExponentFit:
    """ln(divergence) = intercept + rate * step over the series indices [start, end)."""

    rate: float  # per step; NaN where no window of MIN_FIT_POINTS points exists
    intercept: float = math.nan
    start: int = -1
    end: int = -1
    r2: float = math.nan


def fit_exponent(
    divergence: Sequence[float],
    reference: float | Sequence[float],
    steps: Sequence[float] | None = None,
    fraction: float = WINDOW_FRACTION,
) -> ExponentFit:
    """The finite-time Lyapunov exponent of one divergence series (docs/sensitivity.md 2.3).

    The window opens at the first point above the series' initial value (the perturbation
    itself) and closes at the first point at or above `fraction` of `reference` (the
    decorrelated level, a number or one per point), that point included, or before the first
    zero after it (a twin that healed), or at the end of the series. ln(divergence) is fitted
    by least squares against the step over the window.
    """
    d = np.asarray(divergence, dtype=np.float64)
    steps = np.arange(len(d), dtype=np.float64) if steps is None else np.asarray(steps, np.float64)
    ceiling = fraction * np.broadcast_to(np.asarray(reference, dtype=np.float64), d.shape)
    above = np.flatnonzero((d > d[0]) & (d > 0))
    if len(above) == 0:
        return ExponentFit(math.nan)
    start = int(above[0])
    end = len(d)
    reached = np.flatnonzero(d[start:] >= ceiling[start:])
    if len(reached):
        end = start + int(reached[0]) + 1
    zeros = np.flatnonzero(d[start:end] <= 0)
    if len(zeros):
        end = start + int(zeros[0])
    if end - start < MIN_FIT_POINTS:
        return ExponentFit(math.nan, start=start, end=end)
    x, y = steps[start:end], np.log(d[start:end])
    rate, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + rate * x)
    spread = np.sum((y - y.mean()) ** 2)
    r2 = 1 - np.sum(residual**2) / spread if spread > 0 else 1.0
    return ExponentFit(float(rate), float(intercept), start, end, float(r2))


def saturation_index(
    divergence: Sequence[float],
    floor: float = 0.0,
    level: float = SATURATION_LEVEL,
    growth: float = PLATEAU_GROWTH,
) -> int | None:
    """The first index at which the series reaches `level` of its plateau, or None where it has
    none. The plateau is the mean of the last fifth (at least 4 points); the series has one when
    the mean of that window's second half is below `growth` times its first half's, and the
    plateau is above `floor` (a series that levels off low, or dies out, has not saturated)."""
    d = np.asarray(divergence, dtype=np.float64)
    window = max(4, len(d) // 5)
    if len(d) < window:
        return None
    tail = d[-window:]
    first, second = tail[: window // 2].mean(), tail[window // 2 :].mean()
    plateau = tail.mean()
    if not plateau > max(floor, 0.0) or second >= growth * first:
        return None
    return int(np.flatnonzero(d >= level * plateau)[0])


def mean_and_error(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean, standard error of the mean and count of the finite values (NaN where too few)."""
    finite = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if len(finite) == 0:
        return math.nan, math.nan, 0
    error = float(finite.std(ddof=1) / math.sqrt(len(finite))) if len(finite) > 1 else math.nan
    return float(finite.mean()), error, len(finite)


@dataclass
class TwinResult:
    """What one twin's series says."""

    twin: Twin
    trail_fit: ExponentFit
    agent_fit: ExponentFit
    saturation_step: int | None
    grew: bool  # the L1 divergence reached WINDOW_FRACTION of the decorrelated level
    final: tuple[float, float, float]  # METRICS at the last step
    plateau_ratio: float  # final L1 over the decorrelated L1


def analyse_point(series: TwinSeries, point: int = 0) -> list[TwinResult]:
    results = []
    steps, decorrelated = series.steps, series.decorrelated[point]
    for k, twin in enumerate(series.twins[point]):
        metrics = series.metrics[point, k]
        l1, distance = metrics[:, 0], metrics[:, 2]
        saturation = saturation_index(l1, floor=WINDOW_FRACTION * decorrelated[-1, 0])
        results.append(
            TwinResult(
                twin=twin,
                trail_fit=fit_exponent(l1, decorrelated[:, 0], steps),
                agent_fit=fit_exponent(distance, decorrelated[:, 1], steps),
                saturation_step=None if saturation is None else int(steps[saturation]),
                grew=bool(np.any(l1 >= WINDOW_FRACTION * decorrelated[:, 0])),
                final=tuple(float(v) for v in metrics[-1]),
                plateau_ratio=float(l1[-1] / decorrelated[-1, 0]) if decorrelated[-1, 0] > 0 else math.nan,
            )
        )
    return results


def summarise(results: Sequence[TwinResult]) -> dict:
    """Exponents (mean, standard error, count) and saturation, for each kind and for all twins."""
    summary = {}
    groups = {"all": [r for r in results if r.twin.kind != "none"]}
    for kind in ("agent", "trail", "none"):
        if any(r.twin.kind == kind for r in results):
            groups[kind] = [r for r in results if r.twin.kind == kind]
    for name, group in groups.items():
        trail = mean_and_error([r.trail_fit.rate for r in group])
        agent = mean_and_error([r.agent_fit.rate for r in group])
        saturation = mean_and_error([r.saturation_step for r in group])
        summary[name] = {
            "twins": len(group),
            "diverged": sum(1 for r in group if r.trail_fit.start >= 0),
            "grew": sum(1 for r in group if r.grew),
            "healed": sum(1 for r in group if r.trail_fit.start >= 0 and r.final[0] == 0),
            "exponent": _number_triple(trail),
            "agent_exponent": _number_triple(agent),
            "saturation_step": _number_triple(saturation),
            "plateau_ratio": _number_triple(mean_and_error([r.plateau_ratio for r in group])),
        }
    return summary


def _number_triple(triple: tuple[float, float, int]) -> dict:
    mean, error, count = triple
    return {"mean": _json_number(mean), "stderr": _json_number(error), "n": count}


def _json_number(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(f"{value:.6g}")


# ---------------------------------------------------------------------------------------------
# The seed's linearised 2x2 model


@dataclass(frozen=True)
class LinearModel:
    """d/dt (trail perturbation tau, agent response a) = J (tau, a), per step:

        J = [[-decay, deposit],
             [response, -damping]]

    Eigenvalues, in closed form: (-(decay + damping) +- sqrt((decay - damping)^2 +
    4 * response * deposit)) / 2, real since response * deposit >= 0. The leading one is
    positive, perturbations grow, exactly when response * deposit > decay * damping.
    How a preset's parameters map onto these four is `linear_model`'s docstring.
    """

    decay: float
    deposit: float
    response: float
    damping: float

    def jacobian(self) -> np.ndarray:
        return np.array([[-self.decay, self.deposit], [self.response, -self.damping]])

    def eigenvalues(self) -> tuple[float, float]:
        """(leading, other)."""
        return eigenvalues(self.decay, self.deposit, self.response, self.damping)

    @property
    def unstable(self) -> bool:
        return self.response * self.deposit > self.decay * self.damping


def eigenvalues(decay, deposit, response, damping):
    """The closed-form eigenvalues (leading, other) of J; works on numbers and numpy arrays."""
    mean = -(np.asarray(decay) + damping) / 2
    radius = np.sqrt(((np.asarray(decay) - damping) / 2) ** 2 + response * deposit)
    return mean + radius, mean - radius


def linear_model(model: Mapping[str, float], density: float) -> LinearModel:
    """The 2x2 model of a preset's model section and agent density (agents per cell).

    All rates are per step, on the scale the agents resolve: a trail mode of wavelength twice the
    sensor distance, k = pi / sensor_distance.
      decay    = -ln(1 - decay) - ln|1 - diffuse * (1 - (1 + 2 cos k) / 3)|: the trail kept per
                 step is (1 - decay) times the 3x3 blur's gain on that mode;
      deposit  = deposit, trail per agent per step (per unit of trail: the seed's units);
      response = density * sin(turn_angle) * step_size / sensor_distance: the agents in a cell,
                 turning by turn_angle, gather into a bump one sensor distance wide at the
                 sideways speed sin(turn_angle) * step_size, per unit of trail;
      damping  = step_size / sensor_distance: agents cross and leave that bump at step_size.
    """
    k = math.pi / model["sensor_distance"] if model["sensor_distance"] >= 1 else math.pi
    blur = abs(1 - model["diffuse"] * (1 - (1 + 2 * math.cos(k)) / 3))
    decay = -math.log1p(-model["decay"]) - math.log(max(blur, 1e-300))
    crossing = model["step_size"] / model["sensor_distance"]
    response = density * math.sin(math.radians(model["turn_angle"])) * crossing
    return LinearModel(decay=decay, deposit=model["deposit"], response=response, damping=crossing)


def preset_linear_model(preset: Preset) -> LinearModel:
    density = preset.agents.count / (preset.canvas.width * preset.canvas.height)
    return linear_model(preset.model.model_dump(), density)


# ---------------------------------------------------------------------------------------------
# Parameter planes


@dataclass(frozen=True)
class PlaneAxis:
    key: str  # model.<name>
    values: tuple[float, ...]

    @property
    def name(self) -> str:
        return self.key.split(".", 1)[1]


def parse_plane_axis(spec: str) -> PlaneAxis:
    """KEY=LO:HI:N (N >= 1 evenly spaced values from LO to HI) into an axis; AnalysisError
    naming the problem otherwise."""
    key, sep, span = spec.partition("=")
    key = key.strip()
    parts = span.split(":")
    if not sep or len(parts) != 3:
        raise AnalysisError(f"--plane {spec!r}: expected KEY=LO:HI:N, e.g. model.decay=0.01:0.3:16")
    if key not in PLANE_KEYS:
        hint = did_you_mean(key, PLANE_KEYS)
        raise AnalysisError(
            f"--plane {spec!r}: {key!r} is not a model parameter; {hint}choose one of {', '.join(PLANE_KEYS)}"
        )
    try:
        low, high = float(parts[0]), float(parts[1])
        count = int(parts[2])
    except ValueError:
        raise AnalysisError(
            f"--plane {spec!r}: LO and HI must be numbers and N a whole number, e.g. model.decay=0.01:0.3:16"
        ) from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise AnalysisError(f"--plane {spec!r}: LO and HI must be finite numbers")
    if not 1 <= count <= 1024:
        raise AnalysisError(f"--plane {spec!r}: N must be from 1 to 1024, got {count}")
    values = np.linspace(low, high, count) if count > 1 else np.array([low])
    return PlaneAxis(key, tuple(float(v) for v in values))


def plane_presets(preset: Preset, axes: Sequence[PlaneAxis]) -> list[Preset]:
    """One preset per grid point, the first axis varying slowest; every value is validated
    first and all problems are reported at once (PresetError)."""
    if len(axes) != 2 or axes[0].key == axes[1].key:
        raise AnalysisError("--plane needs two different model parameters")
    data = preset.model_dump(mode="json")
    problems = []
    for axis in axes:
        for value in axis.values:
            try:
                _point(data, {axis.name: value}, f"--plane {axis.key}={value:g}")
            except PresetError as error:
                problems.extend(error.problems)
    if problems:
        raise PresetError(problems)
    return [
        _point(data, {axes[0].name: a, axes[1].name: b}, "--plane")
        for a in axes[0].values
        for b in axes[1].values
    ]


def _point(data: dict, values: dict, source: str) -> Preset:
    point = {**data, "model": {**data["model"], **values}}
    return build_preset(point, source)


# ---------------------------------------------------------------------------------------------
# Files: CSV, plots, JSON summaries


def output_stem(preset: Preset, out_dir: Path, suffix: str) -> Path:
    return Path(out_dir) / preset.name / f"{preset.name}-s{preset.seed}-{suffix}"


def _format(value: float) -> str:
    return f"{value:.9g}"


def write_twin_csv(path: Path, series: TwinSeries, width: int, point: int = 0) -> None:
    """One row per step and twin: the twin's perturbation, METRICS, the decorrelated levels."""
    rows = []
    for i, step in enumerate(series.steps):
        level = series.decorrelated[point, i]
        for k, twin in enumerate(series.twins[point]):
            rows.append(
                (
                    int(step),
                    k + 1,
                    twin.kind,
                    twin.describe(width),
                    int(twin.found),
                    *(_format(v) for v in series.metrics[point, k, i]),
                    _format(level[0]),
                    _format(level[1]),
                )
            )
    write_csv(
        path,
        ("step", "twin", "kind", "target", "found", *METRICS, "decorrelated_l1", "decorrelated_distance_px"),
        rows,
    )


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_divergence(
    path: Path, preset: Preset, series: TwinSeries, results: Sequence[TwinResult], summary: dict
) -> None:
    """Three panels against the step: L1 (log, with each fitted line), 1 - correlation (log),
    agent distance (log)."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.6), constrained_layout=True)
    colours = {"agent": "tab:red", "trail": "tab:blue", "none": "tab:grey"}
    steps = series.steps
    for k, result in enumerate(results):
        metrics, colour = series.metrics[0, k], colours[result.twin.kind]
        label = result.twin.kind if k < 2 else None
        with np.errstate(divide="ignore", invalid="ignore"):
            for axis, values in zip(axes, (metrics[:, 0], 1 - metrics[:, 1], metrics[:, 2])):
                axis.plot(
                    steps, np.where(values > 0, values, np.nan), color=colour, lw=1, alpha=0.8, label=label
                )
        fit = result.trail_fit
        if math.isfinite(fit.rate):
            x = steps[fit.start : fit.end]
            axes[0].plot(x, np.exp(fit.intercept + fit.rate * x), color="black", lw=1.5, ls="--")
    axes[0].plot(steps, series.decorrelated[0, :, 0], color="black", lw=1, ls=":", label="decorrelated level")
    axes[0].plot(
        steps,
        WINDOW_FRACTION * series.decorrelated[0, :, 0],
        color="grey",
        lw=1,
        ls=":",
        label=f"{WINDOW_FRACTION:g} x decorrelated (window end)",
    )
    axes[2].plot(steps, series.decorrelated[0, :, 1], color="black", lw=1, ls=":", label="decorrelated level")
    titles = (
        "trail: sum|T_twin - T_base| / sum T_base",
        "trail: 1 - Pearson correlation",
        "agents: mean torus distance (px)",
    )
    for axis, title in zip(axes, titles):
        axis.set_yscale("log")
        axis.set_xlabel("step")
        axis.set_title(title, fontsize=10)
        axis.grid(True, which="major", alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    overall = summary["all"]["exponent"]
    figure.suptitle(
        f"{preset.name} (seed {preset.seed}): finite-time Lyapunov exponent "
        f"{_pm(overall)} per step over {overall['n']} twins (dashed: fits)",
        fontsize=11,
    )
    _save_figure(figure, path)


def _pm(triple: dict, digits: int = 4) -> str:
    mean, error = triple["mean"], triple["stderr"]
    if mean is None:
        return "n/a"
    return f"{mean:.{digits}f}" + (f" ± {error:.{digits}f}" if error is not None else "")


def _save_figure(figure, path: Path) -> None:
    plt = _pyplot()
    partial = PartialFile(path)
    try:
        figure.savefig(partial.temporary, dpi=110, format="png")
    finally:
        plt.close(figure)
    partial.commit()


@dataclass
class PlaneResult:
    axes: tuple[PlaneAxis, PlaneAxis]
    exponent: np.ndarray  # [n1, n2] mean over twins (NaN where none fitted)
    stderr: np.ndarray
    fitted: np.ndarray  # [n1, n2] twins with a finite exponent
    grew: np.ndarray  # [n1, n2] share of twins whose divergence reached the window's end level
    saturation: np.ndarray  # [n1, n2] mean saturation step (NaN where none saturated)
    leading: np.ndarray  # [n1, n2] the linear model's leading eigenvalue
    threshold: float

    @property
    def confusion(self) -> dict[str, int]:
        """Points with a measured exponent, by (measured unstable, model unstable)."""
        valid = np.isfinite(self.exponent)
        measured, model = self.exponent[valid] > self.threshold, self.leading[valid] > 0
        return {
            "both_unstable": int(np.sum(measured & model)),
            "both_stable": int(np.sum(~measured & ~model)),
            "model_only_unstable": int(np.sum(~measured & model)),
            "measured_only_unstable": int(np.sum(measured & ~model)),
        }

    @property
    def agreement(self) -> tuple[float, int]:
        """Share of points with a measured exponent where (exponent > threshold) equals the linear
        model's (leading eigenvalue > 0), and how many points that is."""
        valid = np.isfinite(self.exponent)
        if not valid.any():
            return math.nan, 0
        agree = (self.exponent[valid] > self.threshold) == (self.leading[valid] > 0)
        return float(agree.mean()), int(valid.sum())


def analyse_plane(
    presets: Sequence[Preset], axes: Sequence[PlaneAxis], series: TwinSeries, threshold: float
) -> PlaneResult:
    shape = (len(axes[0].values), len(axes[1].values))
    exponent, stderr, fitted, grew, saturation, leading = (np.full(shape, np.nan) for _ in range(6))
    for point, preset in enumerate(presets):
        index = np.unravel_index(point, shape)
        results = [r for r in analyse_point(series, point) if r.twin.kind != "none"]
        exponent[index], stderr[index], fitted[index] = mean_and_error([r.trail_fit.rate for r in results])
        grew[index] = np.mean([r.grew for r in results]) if results else np.nan
        saturation[index] = mean_and_error([r.saturation_step for r in results])[0]
        leading[index] = preset_linear_model(preset).eigenvalues()[0]
    return PlaneResult(tuple(axes), exponent, stderr, fitted, grew, saturation, leading, threshold)


def write_plane_csv(path: Path, plane: PlaneResult) -> None:
    first, second = plane.axes
    rows = []
    for i, a in enumerate(first.values):
        for j, b in enumerate(second.values):
            measured = plane.exponent[i, j]
            rows.append(
                (
                    _format(a),
                    _format(b),
                    _format(measured),
                    _format(plane.stderr[i, j]),
                    int(plane.fitted[i, j]),
                    _format(plane.grew[i, j]),
                    _format(plane.saturation[i, j]),
                    _format(plane.leading[i, j]),
                    int(measured > plane.threshold) if math.isfinite(measured) else "",
                    int(plane.leading[i, j] > 0),
                )
            )
    write_csv(
        path,
        (
            first.key,
            second.key,
            "exponent",
            "exponent_stderr",
            "twins_fitted",
            "grew_share",
            "saturation_step",
            "linear_leading_eigenvalue",
            "measured_unstable",
            "linear_unstable",
        ),
        rows,
    )


def plot_plane(path: Path, preset: Preset, plane: PlaneResult) -> None:
    """The measured exponent as a heat map over the plane, the linear model's boundary (leading
    eigenvalue 0) as a black line, and a cross on every point where the two disagree."""
    plt = _pyplot()
    from matplotlib.colors import TwoSlopeNorm

    first, second = plane.axes
    x, y = np.asarray(first.values), np.asarray(second.values)
    figure, axis = plt.subplots(figsize=(7.5, 6), constrained_layout=True)
    data = plane.exponent.T  # rows: second axis
    finite = data[np.isfinite(data)]
    low = min(finite.min(), plane.threshold - 1e-6) if finite.size else plane.threshold - 1
    high = max(finite.max(), plane.threshold + 1e-6) if finite.size else plane.threshold + 1
    norm = TwoSlopeNorm(vcenter=plane.threshold, vmin=low, vmax=high)
    mesh = axis.pcolormesh(
        _edges(x), _edges(y), np.ma.masked_invalid(data), cmap="coolwarm", norm=norm, shading="flat"
    )
    figure.colorbar(mesh, ax=axis, label="finite-time Lyapunov exponent (per step)")
    fine_x, fine_y, fine = _linear_surface(preset, plane.axes)
    if np.nanmin(fine) < 0 < np.nanmax(fine):
        axis.contour(fine_x, fine_y, fine, levels=[0.0], colors="black", linewidths=2)
    axis.plot([], [], color="black", lw=2, label="2x2 model: leading eigenvalue = 0")
    measured = plane.exponent > plane.threshold
    disagree = np.isfinite(plane.exponent) & (measured != (plane.leading > 0))
    ii, jj = np.nonzero(disagree)
    axis.scatter(x[ii], y[jj], marker="x", color="black", s=30, label="model and measurement disagree")
    share, count = plane.agreement
    axis.set_xlabel(first.key)
    axis.set_ylabel(second.key)
    axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    axis.set_title(
        f"{preset.name}: measured exponent; 2x2 model agrees on {share:.0%} of {count} points", fontsize=10
    )
    _save_figure(figure, path)


def _edges(values: np.ndarray) -> np.ndarray:
    if len(values) == 1:
        return np.array([values[0] - 0.5, values[0] + 0.5])
    middle = (values[1:] + values[:-1]) / 2
    return np.concatenate([[2 * values[0] - middle[0]], middle, [2 * values[-1] - middle[-1]]])


def _linear_surface(preset: Preset, axes: Sequence[PlaneAxis], size: int = 200):
    """The leading eigenvalue on a fine grid over the plane (for the boundary line)."""
    first, second = axes
    xs = np.linspace(min(first.values), max(first.values), size)
    ys = np.linspace(min(second.values), max(second.values), size)
    density = preset.agents.count / (preset.canvas.width * preset.canvas.height)
    model = preset.model.model_dump()
    surface = np.array(
        [
            [linear_model({**model, first.name: a, second.name: b}, density).eigenvalues()[0] for a in xs]
            for b in ys
        ]
    )
    return xs, ys, surface


# ---------------------------------------------------------------------------------------------
# The commands


def _run_header(preset: Preset, options: RunOptions, device_name: str) -> dict:
    return {
        "physarum_version": version(),
        "preset": preset.name,
        "seed": preset.seed,
        "preset_yaml": embedded_text(preset),
        "backend": options.backend,
        "device": device_name,
        "perturbed_at_step": options.at,
        "steps": options.steps,
        "twins": list(options.twins),
        "window_fraction": WINDOW_FRACTION,
        "saturation_level": SATURATION_LEVEL,
    }


def sensitivity(preset: Preset, options: RunOptions, out_dir: Path, device_name: str = "") -> dict:
    """Twins of one preset: CSV, plot and JSON summary under out_dir/<name>/; returns the summary."""
    series = run_twins([preset], options)
    results = analyse_point(series)
    summary = summarise(results)
    stem = output_stem(preset, out_dir, "sensitivity")
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = {
        "csv": stem.with_suffix(".csv"),
        "png": stem.with_suffix(".png"),
        "json": stem.with_suffix(".json"),
    }
    write_twin_csv(paths["csv"], series, preset.canvas.width)
    plot_divergence(paths["png"], preset, series, results, summary)
    linear = preset_linear_model(preset)
    document = {
        **_run_header(preset, options, device_name),
        "summary": summary,
        "twins_detail": [
            {
                "kind": r.twin.kind,
                "target": r.twin.describe(preset.canvas.width),
                "found": r.twin.found,
                "exponent": _json_number(r.trail_fit.rate),
                "r2": _json_number(r.trail_fit.r2),
                "window": [int(series.steps[r.trail_fit.start]), int(series.steps[r.trail_fit.end - 1])]
                if r.trail_fit.end > r.trail_fit.start >= 0
                else None,
                "agent_exponent": _json_number(r.agent_fit.rate),
                "grew": r.grew,
                "saturation_step": r.saturation_step,
                "final": dict(zip(METRICS, (_json_number(v) for v in r.final))),
                "plateau_ratio": _json_number(r.plateau_ratio),
            }
            for r in results
        ],
        "linear_model": {
            **{k: _json_number(v) for k, v in linear.__dict__.items()},
            "leading_eigenvalue": _json_number(linear.eigenvalues()[0]),
            "unstable": linear.unstable,
        },
        "outputs": {k: p.name for k, p in paths.items()},
    }
    write_json(paths["json"], document)
    return document


def sensitivity_plane(
    preset: Preset,
    axes: Sequence[PlaneAxis],
    options: RunOptions,
    out_dir: Path,
    threshold: float = GROWTH_THRESHOLD,
    device_name: str = "",
) -> dict:
    """Twins of every point of a parameter plane: heat map, CSV and JSON; returns the summary."""
    presets = plane_presets(preset, axes)
    series = run_twins(presets, options)
    plane = analyse_plane(presets, axes, series, threshold)
    stem = output_stem(preset, out_dir, f"plane-{axes[0].name}-{axes[1].name}")
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = {
        "csv": stem.with_suffix(".csv"),
        "png": stem.with_suffix(".png"),
        "json": stem.with_suffix(".json"),
    }
    write_plane_csv(paths["csv"], plane)
    plot_plane(paths["png"], preset, plane)
    share, count = plane.agreement
    document = {
        **_run_header(preset, options, device_name),
        "plane": {axis.key: list(axis.values) for axis in axes},
        "threshold": threshold,
        "agreement": _json_number(share),
        "points_compared": count,
        "measured_unstable": int(np.sum(plane.exponent > threshold)),
        "linear_unstable": int(np.sum(plane.leading > 0)),
        "confusion": plane.confusion,
        "outputs": {k: p.name for k, p in paths.items()},
    }
    write_json(paths["json"], document)
    return document


def summary_lines(document: dict) -> list[str]:
    """What `physarum sensitivity` prints: the run, the exponents, saturation, the 2x2 model."""
    kinds = document["twins"]
    head = (
        f"{document['preset']} (seed {document['seed']}): {len(kinds)} twins "
        f"({kinds.count('agent')} agent, {kinds.count('trail')} trail) perturbed at step "
        f"{document['perturbed_at_step']}, {document['steps']} steps, {document['backend']} "
        f"on {document['device']}"
    )
    if "plane" in document:
        first, second = document["plane"]
        counts = document["confusion"]
        return [
            head,
            f"plane {first} x {second}: {document['points_compared']} points measured; "
            f"unstable (exponent > {document['threshold']:g}/step): {document['measured_unstable']}, "
            f"by the 2x2 model: {document['linear_unstable']}",
            f"2x2 model agrees on {_share(document['agreement'])} of the points "
            f"(both unstable {counts['both_unstable']}, both stable {counts['both_stable']}, "
            f"model only {counts['model_only_unstable']}, measurement only "
            f"{counts['measured_only_unstable']})",
        ]
    lines = [head]
    for name, group in document["summary"].items():
        saturation = group["saturation_step"]
        saturated = (
            f"saturated at step {_pm(saturation, 0)} ({saturation['n']} twins)"
            if saturation["n"]
            else f"no plateau within {document['steps']} steps"
        )
        lines.append(
            f"  {name:<5} exponent {_pm(group['exponent'])} per step "
            f"({group['exponent']['n']} fitted; agent distance {_pm(group['agent_exponent'])}); "
            f"grew {group['grew']}/{group['twins']}, healed {group['healed']}; {saturated}; "
            f"final L1 / decorrelated {_pm(group['plateau_ratio'])}"
        )
    linear = document["linear_model"]
    lines.append(
        f"  2x2 model: leading eigenvalue {linear['leading_eigenvalue']:.4f} per step "
        f"({'unstable' if linear['unstable'] else 'stable'}; decay {linear['decay']:.4g}, "
        f"deposit {linear['deposit']:.4g}, response {linear['response']:.4g}, "
        f"damping {linear['damping']:.4g})"
    )
    return lines


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"
