"""Twins: which agent or trail cell each twin perturbs, and the perturbed copies of the base.

A perturbation is one 16.16 unit of one agent's x, or one trail cell raised to the next trail
value; both are chosen where they are not silent (docs/sensitivity.md section 1)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ...kernels.api import FRAC_BITS, HEADING_MASK, ONE, TRAIL_FLOOR, State, Tables
from ...kernels.exact import turn_bits
from ...kernels.reference import steer_sign

PERTURBING_KINDS = ("agent", "trail")  # the twins that carry a perturbation
KINDS = (*PERTURBING_KINDS, "none")  # "none": an unperturbed twin, the batch's own control
LOOKAHEAD_STEPS = 64  # steps of the base searched for agents that cross a cell boundary


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
        """The perturbation in words, for the CSV and JSON: "agent 17", "cell (5, 3)" or "none"."""
        if self.kind == "agent":
            return f"agent {self.target}"
        if self.kind == "trail":
            return f"cell ({self.target % width}, {self.target // width})"
        return "none"


def twin_kinds(twins: int, kinds: Sequence[str] = PERTURBING_KINDS) -> list[str]:
    """The kinds of `twins` twins, taking turns: agent, trail, agent, trail, ..."""
    return [kinds[i % len(kinds)] for i in range(twins)]


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
    sign = steer_sign(readings, turn_plus)
    raised = raise_trail(readings)
    turns = ((tables.turn & HEADING_MASK) != 0)[:, None]  # a turn of 0 changes no heading
    found = []
    for sensor in range(3):
        shared = cells == cells[:, sensor : sensor + 1]  # every sensor reading the same cell rises
        changed = steer_sign(torch.where(shared, raised, readings), turn_plus) != sign
        found.append(torch.where(changed & turns, cells[:, sensor], -1))
    found = torch.stack(found, dim=1).reshape(batch, -1)
    return [torch.unique(row[row >= 0]) for row in found]


def _pick(candidates: torch.Tensor, wanted: int, generator: torch.Generator) -> list[int]:
    """`wanted` distinct values of a 1-D tensor, in a seeded random order (fewer if it is short)."""
    candidates = candidates.cpu()
    order = torch.randperm(len(candidates), generator=generator)[:wanted]
    return candidates[order].tolist()


def _fill_in(
    kind: str, found: list[int], excluded, total: int, wanted: int, generator: torch.Generator
) -> list[Twin]:
    """Twins of the `found` targets, then, where they are fewer than `wanted`, random targets out
    of range(total) that are not in `excluded` (a tensor or list of targets), marked not found."""
    twins = [Twin(kind, target) for target in found]
    if len(twins) < wanted:
        spare = torch.ones(total, dtype=torch.bool)
        spare[excluded] = False
        spare = torch.nonzero(spare).flatten()
        twins += [Twin(kind, t, False) for t in _pick(spare, wanted - len(twins), generator)]
    return twins


def choose_trail_twins(state: State, tables: Tables, wanted: int, seed: int) -> list[list[Twin]]:
    """`wanted` trail twins per simulation of `state`: decisive cells in a seeded random order
    first, then (if too few) random other cells, marked not found."""
    chosen = []
    for cells in decisive_cells(state, tables):
        generator = torch.Generator().manual_seed(seed)  # per point: chunking changes nothing
        cells = cells.cpu()
        found = _pick(cells, wanted, generator)
        chosen.append(_fill_in("trail", found, cells, state.height * state.width, wanted, generator))
    return chosen


def agent_positions(simulation) -> torch.Tensor:
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
        hits = torch.nonzero((agent_positions(simulation)[:, 0] & (ONE - 1)) == ONE - 1).cpu().tolist()
        for b, agent in hits:
            if len(found[b]) < wanted and agent not in found[b]:
                found[b].append(agent)
    return [
        _fill_in("agent", agents_found, agents_found, agents, wanted, torch.Generator().manual_seed(seed))
        for agents_found in found
    ]


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
