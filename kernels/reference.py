"""The PyTorch reference backend: the model of docs/model.md as plain tensor code.

Runs on CPU and CUDA. Every other backend is tested against it byte for byte, and it against a
naive per-agent loop (tests/naive.py). Each phase of a step is one method in the model's words,
written as few whole-tensor passes as it allows (on a CPU each operation is a trip through
memory). Every shortcut is exact, and the comment at each says why it gives the same bits:

- per-agent values are laid out [B, k, N], agents innermost, and pairs (x, y) travel together as
  one [B, 2, ...] tensor, so one pass serves both coordinates and all three sensors;
- the three sensor offsets of a heading come from one combined per-simulation table, gathered
  once (no heading sums per step);
- wrap-around is a mask on power-of-two canvases, else two sign-bit corrections
  (kernels/reference_grid.py);
- the turn bit's hash runs on 32-bit words (int32 multiplication keeps the low 32 bits);
- the 3x3 sum adds nine slices of one wrap-padded copy, in the contract's order.

Index arithmetic is int32 where it fits (16.16 positions and cells of one simulation always do,
see api.MAX_CANVAS; batch offsets while B * H * W < 2^31) and int64 beyond.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from .api import (
    EMPTY_WORLD,
    FRAC_BITS,
    HEADING_MASK,
    HEADINGS,
    TRAIL_FLOOR,
    U32,
    Phase,
    State,
    Tables,
    World,
    untimed,
)
from .exact import lowbias32_int, step_key
from .reference_grid import Grid, batch_offsets, clamp, reflect

# lowbias32's multipliers as int32 values with the same low 32 bits.
_HASH_MUL_1 = 0x7FEB352D
_HASH_MUL_2 = 0x846CA68B - (1 << 32)
# The largest float32 below TRAIL_FLOOR: "x <= _BELOW_FLOOR" is exactly "x < TRAIL_FLOOR".
_BELOW_FLOOR = float(np.nextafter(np.float32(TRAIL_FLOOR), np.float32(0)))


def steer_sign(readings: torch.Tensor, turn_plus: torch.Tensor) -> torch.Tensor:
    """[B, N] int8 turn of every agent in units of turn_angle (-1, 0 or +1), by the steering rule
    of docs/model.md section 6.2, from its readings [B, 3, N] float32 (forward F, left L, right R)
    and its random turn direction [B, N] bool (exact.turn_bits; True turns +):

        keep (0)                 where F > L and F > R
        random (+1 or -1)        where F < L and F < R
        (R > L) - (L > R)        otherwise: towards the stronger side, 0 on a tie

    In int8 arithmetic on the rule's float32 comparisons, with random_sign = 2 * turn_plus - 1:
    side = (R > L) - (L > R), sign = side + random * (random_sign - side), sign * (1 - keep).
    """
    # a cast, not a view: Inductor on CUDA cannot lower a bool tensor viewed as int8
    # ("torch.bool is not supported by torch.iinfo"), and torch.compile of the reference is benched
    plus = turn_plus.to(torch.int8)
    above = (readings[:, 1:3] > readings[:, 0:1]).to(torch.int8)  # L > F, R > F
    below = (readings[:, 1:3] < readings[:, 0:1]).to(torch.int8)  # L < F, R < F
    left, right = readings[:, 1], readings[:, 2]
    sign = (right > left).to(torch.int8) - (left > right).to(torch.int8)
    random = above[:, 0] & above[:, 1]
    sign -= random * (sign + 1 - 2 * plus)
    sign *= 1 - (below[:, 0] & below[:, 1])
    return sign


@dataclass
class _Plan:
    """What a step needs besides the state, derived once per (tables, batch, agents, canvas).

    sensors:   [B, 6, HEADINGS] int32, for every heading the 16.16 dx of the forward, left and
               right sensors, then their dy (left and right taken at h -+ sensor_turn).
    steps:     [B, 2, HEADINGS] int32, the step vector (dx, dy) of every heading.
    cell_base: [B, 1, 1] offset of each simulation in a flat [B * H * W] map (None if B = 1).
    agent_mix: [1, N] int32, a ^ (a >> 16) for agent a: the first xorshift of lowbias32(a ^ key)
               is agent_mix ^ (key ^ (key >> 16)), as shifts distribute over xor.
    turn:      [B, 1] int16, turn & 0xFFF, which gives the same heading after the final mask.
    """

    sensors: torch.Tensor
    steps: torch.Tensor
    cell_base: torch.Tensor | None
    agent_mix: torch.Tensor
    turn: torch.Tensor
    deposit: torch.Tensor  # [B, 1, 1] float32, like keep, spread and retain
    keep: torch.Tensor
    spread: torch.Tensor
    retain: torch.Tensor
    seed_key: torch.Tensor  # [B] int64
    grid: Grid
    shape: tuple[int, int, int, int]  # B, N, H, W
    # The world (api.World; B counts groups). species: S. mix: [B, S, 1, 1] float32 or None.
    # species_base: [B, 1, 1] offset of each group's simulation's first map in the flat trail.
    # wall: [B, H, W] bool per group or None; food: [B, H, W] float32 (0 on walls) or None.
    species: int = 1
    mix: torch.Tensor | None = None
    species_base: torch.Tensor | None = None
    wall: torch.Tensor | None = None
    food: torch.Tensor | None = None

    @staticmethod
    def build(
        tables: Tables, batch: int, agents: int, height: int, width: int, world: World = EMPTY_WORLD
    ) -> _Plan:
        device = tables.sense_offset.device
        world = world.to(device)
        species = world.species
        group = torch.arange(batch, device=device)
        wall, food = world.group_walls(), world.free_food()
        heading = torch.arange(HEADINGS, device=device)
        turn = tables.sensor_turn.to(torch.int64)[:, None]
        sensor_heading = torch.stack(
            [
                heading.expand(batch, HEADINGS),
                (heading - turn) & HEADING_MASK,
                (heading + turn) & HEADING_MASK,
            ],
            dim=1,
        )  # [B, 3, HEADINGS]
        offset = tables.sense_offset.transpose(1, 2)  # [B, 2, HEADINGS]: the dx row, the dy row
        sensors = torch.cat(
            [offset[:, i : i + 1].expand(batch, 3, HEADINGS).gather(2, sensor_heading) for i in (0, 1)], dim=1
        )
        agent = torch.arange(agents, device=device, dtype=torch.int64)
        return _Plan(
            sensors=sensors.contiguous(),
            steps=tables.step_offset.transpose(1, 2).contiguous(),
            cell_base=batch_offsets(batch, height * width, device),
            agent_mix=(agent ^ (agent >> 16)).to(torch.int32)[None, :],  # a < N < 2^31
            turn=(tables.turn[:, None] & HEADING_MASK).to(torch.int16),
            deposit=tables.deposit[:, None, None],
            keep=tables.keep[:, None, None],
            spread=tables.spread[:, None, None],
            retain=tables.retain[:, None, None],
            seed_key=tables.seed_key,
            grid=Grid.build(height, width, device, world.boundary),
            shape=(batch, agents, height, width),
            species=species,
            mix=None if world.mix is None else world.mix.to(torch.float32)[:, :, None, None],
            species_base=(group - group % species).mul(height * width)[:, None, None],
            wall=wall,
            food=food,
        )

    @staticmethod
    def lookup(table: torch.Tensor, heading: torch.Tensor) -> torch.Tensor:
        """[B, k, N] entries of a [B, k, HEADINGS] table at int64 headings [B, N] (a new tensor)."""
        batch, rows, _ = table.shape
        return table.gather(2, heading[:, None, :].expand(batch, rows, heading.shape[1]))

    # -- the phases of one step (docs/model.md section 6) ------------------------------------

    def sense(self, trail: torch.Tensor, position: torch.Tensor, heading: torch.Tensor) -> torch.Tensor:
        """[B, 3, N] trail at the forward, left and right sensors (section 6.1); int64 headings."""
        batch, agents, _, _ = self.shape
        xy = self.lookup(self.sensors, heading).view(batch, 2, 3, agents)  # (dx, dy) of 3 sensors
        xy += position[:, :, None, :]  # x + dx and y + dy
        cell = self.grid.wrapped_cells_(xy)
        if self.mix is None:
            if self.cell_base is not None:
                cell = cell + self.cell_base
            return trail.reshape(-1).index_select(0, cell.reshape(-1)).view(batch, 3, agents)
        # Species: the weighted sum of the S maps of the group's simulation, species 0 first,
        # each product and sum rounded on its own.
        cell = (cell + self.species_base).reshape(-1)
        flat, plane = trail.reshape(-1), trail.shape[1] * trail.shape[2]
        reading = None
        for j in range(self.species):
            term = self.mix[:, j] * flat.index_select(0, cell + j * plane).view(batch, 3, agents)
            reading = term if reading is None else reading.add_(term)
        return reading

    def key_mix(self, step: torch.Tensor) -> torch.Tensor:
        """[B, 1] int32 holding the 32 bits of k ^ (k >> 16) for each simulation's step key
        k = exact.step_key(seed_key, step).

        On the CPU the B scalars are hashed as Python ints by exact.lowbias32_int, the same
        function, instead of by some thirty tiny tensor operations.
        """
        if self.seed_key.device.type == "cpu" and not torch.compiler.is_compiling():
            step_hash = lowbias32_int(int(step) & U32)
            keys = [lowbias32_int(seed_key ^ step_hash) for seed_key in self.seed_key.tolist()]
            mixed = [k ^ (k >> 16) for k in keys]
            return torch.tensor([[m - (m >> 31 << 32)] for m in mixed], dtype=torch.int32)
        key = step_key(self.seed_key, step)[:, None]
        key = key ^ (key >> 16)
        return ((key + 2**31 & U32) - 2**31).to(torch.int32)

    def hash_before_last(self, step: torch.Tensor) -> torch.Tensor:
        """[B, N] int32 words of lowbias32(agent ^ key) before its last x ^= x >> 16, once per
        step for both of its uses (turn_plus and random_heading).

        The int32 tensors hold the hash's uint32 words in two's complement. Xor does not care;
        int32 multiplication keeps the low 32 bits of the product (it wraps around, as the
        uint32 multiply of the Triton kernels does); the logical shift x >> 15 is the arithmetic
        one with the 15 copied sign bits masked off.
        """
        x = self.agent_mix ^ self.key_mix(step)
        x *= _HASH_MUL_1
        x ^= (x >> 15) & 0x1FFFF
        x *= _HASH_MUL_2
        return x

    @staticmethod
    def turn_plus(words: torch.Tensor) -> torch.Tensor:
        """[B, N] bool, the turn bit of every agent (True: turn +), bit 31 of lowbias32(agent ^ key)
        as exact.turn_bits gives it, from hash_before_last's words: the hash's last step
        x ^= x >> 16 leaves bit 31 alone, so the bit is the sign of the word before it."""
        return words < 0

    @staticmethod
    def random_heading(words: torch.Tensor) -> torch.Tensor:
        """[B, N] int16, the low 12 bits of lowbias32(agent ^ key) from hash_before_last's words:
        where an agent turns when a wall stops it (the same hash as its turn bit)."""
        return ((words ^ ((words >> 16) & 0xFFFF)) & HEADING_MASK).to(torch.int16)

    def steer(self, readings: torch.Tensor, turn_plus: torch.Tensor) -> torch.Tensor:
        """[B, N] int16 heading change (section 6.2): steer_sign's turns of turn_angle."""
        return steer_sign(readings, turn_plus) * self.turn

    def move(self, position: torch.Tensor, heading: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """[B, 2, N] int32 positions one step along the new headings [B, N] int16 (section 6.3),
        and the headings after the boundary (reflect mirrors the ones that hit an edge)."""
        moved = self.lookup(self.steps, heading.to(torch.int64))
        moved += position
        if self.grid.boundary == "wrap":
            return self.grid.wrapped_positions_(moved), heading
        size = self.grid.sizes << FRAC_BITS
        if self.grid.boundary == "clamp":
            return clamp(moved, size), heading
        hit = (moved < 0) | (moved >= size)
        heading = torch.where(hit[:, 0], (HEADINGS // 2 - heading) & HEADING_MASK, heading)
        heading = torch.where(hit[:, 1], (-heading) & HEADING_MASK, heading)
        return reflect(moved, size), heading

    def stop_at_walls(
        self, old: torch.Tensor, moved: torch.Tensor, heading: torch.Tensor, words: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Agents whose move ends on a wall stay where they were and take a random heading
        (words: this step's hash_before_last)."""
        batch, agents, height, width = self.shape
        blocked = self.wall.view(batch, -1).gather(1, self.grid.cells(moved).to(torch.int64))
        position = torch.where(blocked[:, None, :], old, moved)
        return position, torch.where(blocked, self.random_heading(words), heading)

    def deposit_counts(self, position: torch.Tensor) -> torch.Tensor:
        """[B, H, W] int64 number of agents in each cell (section 6.4; integers, order-free)."""
        batch, _, height, width = self.shape
        cell = self.grid.cells(position)
        if self.cell_base is not None:
            cell = cell + self.cell_base[:, :, 0]
        counts = torch.bincount(cell.reshape(-1), minlength=batch * height * width)
        return counts.view(batch, height, width)

    def diffuse_and_decay(self, trail: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """T_{t+1} = retain * (keep * T' + spread * sum3x3(T')), T' = T + deposit * counts, then
        the flush to 0 below TRAIL_FLOOR (section 6.5); every product and sum rounded on its own,
        with its operands in the contract's order."""
        batch, _, height, width = self.shape
        # T' into the middle of a copy padded by one wrapped-around cell on every side.
        padded = trail.new_empty((batch, height + 2, width + 2))
        deposited = padded[:, 1:-1, 1:-1]
        # deposit * float32(count): the product's float32 type converts each count, as .to() does
        torch.add(trail, self.deposit * counts, out=deposited)
        if self.food is not None:
            deposited += self.food  # (T + deposit * count) + food
        if self.grid.boundary == "wrap":
            padded[:, 0, 1:-1] = padded[:, height, 1:-1]
            padded[:, -1, 1:-1] = padded[:, 1, 1:-1]
            padded[:, :, 0] = padded[:, :, width]
            padded[:, :, -1] = padded[:, :, 1]
        else:  # reflect and clamp both repeat the edge cell beyond the edge
            padded[:, 0, 1:-1] = padded[:, 1, 1:-1]
            padded[:, -1, 1:-1] = padded[:, height, 1:-1]
            padded[:, :, 0] = padded[:, :, 1]
            padded[:, :, -1] = padded[:, :, width]
        # The left fold of the nine neighbours, row by row, left to right: each += is one float32
        # addition of the running sum and the next neighbour.
        total = padded[:, 0:height, 0:width] + padded[:, 0:height, 1 : width + 1]
        for dy, dx in ((0, 2), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)):
            total += padded[:, dy : dy + height, dx : dx + width]
        total *= self.spread  # one finite factor: its order does not matter, not even for NaN
        blended = self.keep * deposited
        blended += total  # keep * T' + spread * S in this order (it decides which NaN a sum keeps)
        blended *= self.retain
        # threshold replaces x <= _BELOW_FLOOR, i.e. x < TRAIL_FLOOR, by +0 and keeps NaN.
        torch.threshold_(blended, _BELOW_FLOOR, 0.0)
        return blended if self.wall is None else blended.masked_fill_(self.wall, 0.0)

    def step(self, state: State, phase: Phase = untimed) -> State:
        """The state one step later, each phase of TorchSimulation.phases inside phase(name)."""
        with phase("sense"):
            readings = self.sense(state.trail, state.position, state.heading.to(torch.int64))
        with phase("steer"):
            words = self.hash_before_last(state.step)
            heading = state.heading + self.steer(readings, self.turn_plus(words))
            heading &= HEADING_MASK
        with phase("move"):
            position, heading = self.move(state.position, heading)
            if self.wall is not None:
                position, heading = self.stop_at_walls(state.position, position, heading, words)
        with phase("deposit"):
            counts = self.deposit_counts(position)
        with phase("diffuse"):
            trail = self.diffuse_and_decay(state.trail, counts)
        return State(position=position, heading=heading, trail=trail, step=state.step + 1)


def _plan(state: State, tables: Tables, world: World = EMPTY_WORLD) -> _Plan:
    return _Plan.build(tables, state.batch, state.agents, state.height, state.width, world)


def sense(
    trail: torch.Tensor, x: torch.Tensor, y: torch.Tensor, heading: torch.Tensor, tables: Tables
) -> torch.Tensor:
    """Trail [B, N] float32 at the nearest cell one sensor offset ahead along `heading` [B, N]."""
    batch, height, width = trail.shape
    offset = _Plan.lookup(tables.sense_offset.transpose(1, 2), heading.to(torch.int64))
    cell = Grid.build(height, width, trail.device).wrapped_cells_(offset + torch.stack([x, y], 1))
    batch_start = torch.arange(batch, device=trail.device)[:, None] * (height * width)
    cell = cell.to(torch.int64) + batch_start
    return trail.reshape(-1)[cell]


def step(state: State, tables: Tables, world: World = EMPTY_WORLD) -> State:
    """One step of every simulation in the batch; returns the new state."""
    return _plan(state, tables, world).step(state)


class TorchSimulation:
    """The reference backend behind the Simulation protocol (api.Simulation).

    `state` is a plain attribute: each step replaces it (the old state is never written), and a
    state assigned to it is where the next step starts."""

    name = "torch"
    dims = 2
    phases = ("sense", "steer", "move", "deposit", "diffuse")  # docs/model.md sections 6.1-6.5

    def __init__(
        self,
        state: State,
        tables: Tables,
        world: World | None = None,
        device: torch.device | str | None = None,
    ):
        world = world or EMPTY_WORLD
        if device is not None:
            state, tables, world = state.to(device), tables.to(device), world.to(device)
        self.state = state
        self.tables = tables
        self.world = world
        self.world.simulations(state.batch)  # checks the groups make whole simulations
        self._plan: _Plan | None = None
        self._plan_key = None

    def _current_plan(self) -> _Plan:
        """The plan of the current state; built once, again only if its shape or tables change."""
        state = self.state
        key = (id(self.tables), state.batch, state.agents, state.height, state.width, state.trail.device)
        if self._plan_key != key:
            self._plan, self._plan_key = _plan(state, self.tables, self.world), key
        return self._plan

    def advance(self, steps: int) -> None:
        plan, state = self._current_plan(), self.state
        for _ in range(steps):
            state = plan.step(state)
        self.state = state

    def eager_step(self) -> None:
        self.advance(1)

    def retune(
        self, tables: Tables, mix: torch.Tensor | None = None, food: torch.Tensor | None = None
    ) -> None:
        """New tables (and the world's mix or food) from the next step on; the plan is rebuilt."""
        device = self.state.trail.device
        self.tables = tables.to(device)
        changes = {
            name: value.to(device) for name, value in (("mix", mix), ("food", food)) if value is not None
        }
        self.world = replace(self.world, **changes)
        self._plan_key = None  # never an old plan: a new Tables may reuse a freed one's id

    def profiled_step(self, phase: Phase) -> None:
        self.state = self._current_plan().step(self.state, phase)

    @staticmethod
    def unusable_on(device: torch.device) -> str | None:
        """The reference runs wherever PyTorch does."""
        return None

    @staticmethod
    def device_bytes(agents: int) -> tuple[float, float]:
        """Per agent a step's int64 index and gather temporaries; per cell fourteen 4-byte maps
        (the trail, the counts, the padded copy, the 3x3 sum and their temporaries) and 8 bytes
        of slack."""
        return 160, 4 * 14 + 8

    @property
    def trail(self) -> torch.Tensor:
        return self.state.trail

    @property
    def agents(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.state.position, self.state.heading
