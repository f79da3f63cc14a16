"""The contract every backend keeps: its constants, the state, per-simulation tables, the world.

Numbers that must agree bit for bit across backends (see docs/model.md):

- Headings are integers on a circle of ``HEADINGS`` steps (12 bits).
- Positions are int32 fixed point with ``FRAC_BITS`` fractional bits (16.16); cells are
  ``position >> FRAC_BITS``. Wrap-around is a compare and an add, never a float modulo.
- Sensor offsets and step vectors are per-simulation integer lookup tables, built once from an
  exactly computed unit circle (Decimal Taylor series, independent of the platform's libm).
- Randomness is ``lowbias32`` (a 32-bit integer hash) of (seed, step, agent), never torch.rand.
- Deposits are int32 counts; the trail is float32, updated in one fixed order of operations.

The constants and ModelParams live in kernels/limits.py (no torch) and are re-exported here. The
exact arithmetic built on them is kernels/exact.py; spawning, kernels/spawn.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import ClassVar, Protocol, runtime_checkable

import torch

from .limits import (
    BOUNDARIES,
    FRAC_BITS,
    HEADING_BITS,
    HEADING_MASK,
    HEADINGS,
    MAX_CANVAS,
    MAX_DISTANCE,
    MAX_SPECIES,
    MIN_COEFFICIENT,
    ONE,
    TRAIL_FLOOR,
    U32,
    UNIT_BITS,
    ModelParams,
)


@dataclass
class State:
    """The whole simulated world of B simulations sharing one canvas size.

    In D spatial dimensions (`dims`: 2, or 3 for the voxel model of kernels/reference3d.py and
    kernels/triton3d.py, docs/model.md section 13) over a grid of cells (`grid`: (H, W) in 2D,
    (Z, Y, X) = (depth, H, W) in 3D):
    position: [B, D, N] int32, fixed point 16.16, row 0 is x, row 1 is y (row 2 z), each in
              [0, size << 16) of its axis
    heading:  [B, N] int16, an integer direction: in 2D an angle in [0, HEADINGS); in 3D an
              index into exact3d's fixed table of DIRECTIONS unit vectors
    trail:    [B, *grid] float32, >= 0, no subnormals (2D: [B, H, W])
    step:     [] int64, steps taken so far (kept on the device so graph replays stay correct)
    """

    position: torch.Tensor
    heading: torch.Tensor
    trail: torch.Tensor
    step: torch.Tensor

    @property
    def batch(self) -> int:
        return self.trail.shape[0]

    @property
    def agents(self) -> int:
        return self.heading.shape[1]

    @property
    def dims(self) -> int:
        """The spatial dimensions D: position's rows."""
        return self.position.shape[1]

    @property
    def grid(self) -> tuple[int, ...]:
        """The trail's cells along each axis, slowest first: (H, W) in 2D."""
        return tuple(self.trail.shape[1:])

    @property
    def height(self) -> int:
        return self.trail.shape[1]

    @property
    def width(self) -> int:
        return self.trail.shape[2]

    def to(self, device: torch.device | str) -> State:
        return State(*(t.to(device) for t in (self.position, self.heading, self.trail, self.step)))

    def clone(self) -> State:
        return State(*(t.clone() for t in (self.position, self.heading, self.trail, self.step)))

    @classmethod
    def concat(cls, states: Sequence[State]) -> State:
        """The simulations of `states`, in order, as one batch. They share one canvas size and
        agent count, lie on one device and stand at the same step (a batch has one counter)."""
        if not states:
            raise ValueError("no states to concatenate")
        first = states[0]
        steps_known = first.step.device.type != "meta"  # meta tensors hold shapes, no values
        if steps_known and any(not torch.equal(s.step, first.step) for s in states[1:]):
            raise ValueError("states at different steps make no batch: a batch shares one step counter")
        return cls(
            position=torch.cat([s.position for s in states]),
            heading=torch.cat([s.heading for s in states]),
            trail=torch.cat([s.trail for s in states]),
            step=first.step,
        )


@dataclass
class Tables:
    """Per-simulation constants derived once from ModelParams.

    sense_offset: [B, HEADINGS, 2] int32, sensor offset (dx, dy) in 16.16 for each heading
    step_offset:  [B, HEADINGS, 2] int32, step vector (dx, dy) in 16.16 for each heading
    sensor_turn:  [B] int32, sensor angle in heading units
    turn:         [B] int32, turn angle in heading units
    deposit:      [B] float32, trail added per agent in a cell
    keep:         [B] float32, 1 - diffuse
    spread:       [B] float32, diffuse / 9 (weight of each of the nine neighbours)
    retain:       [B] float32, 1 - decay
    seed_key:     [B] int64, lowbias32(seed), in [0, 2^32)
    """

    sense_offset: torch.Tensor
    step_offset: torch.Tensor
    sensor_turn: torch.Tensor
    turn: torch.Tensor
    deposit: torch.Tensor
    keep: torch.Tensor
    spread: torch.Tensor
    retain: torch.Tensor
    seed_key: torch.Tensor

    def to(self, device: torch.device | str) -> Tables:
        return replace(self, **{k: v.to(device) for k, v in self.__dict__.items()})


@dataclass
class World:
    """What a batch's world adds to the empty torus (docs/model.md section 12).

    With S species per simulation, every (simulation b, species s) pair is a *group*
    g = b * S + s: State and Tables hold one entry per group (State.batch = B * S), so a group's
    agents, trail map, deposit counts and parameters are those of one species of one simulation,
    and groups b * S .. b * S + S - 1 make up simulation b. With S = 1 a group is a simulation.

    species:  S, species per simulation, 1 .. MAX_SPECIES.
    boundary: 'wrap' (a torus), 'reflect' (mirror at the edges) or 'clamp' (held at the edges).
    mix:      [G, S] float32 or None. mix[g, j]: the weight group g gives species j's trail of
              its own simulation when sensing (negative repels). None: S = 1, the trail itself.
    wall:     [B, H, W] uint8 or None. 1: a wall; agents never enter it and its trail is 0.
    food:     [G, H, W] float32 or None. Trail added to each group's map every step, with the
              deposits, before diffusion; 0 or >= TRAIL_FLOOR (see brightness_table); backends
              ignore it on walls (free_food).
    """

    species: int = 1
    boundary: str = "wrap"
    mix: torch.Tensor | None = None
    wall: torch.Tensor | None = None
    food: torch.Tensor | None = None

    def __post_init__(self):
        if self.boundary not in BOUNDARIES:
            raise ValueError(f"boundary must be one of {', '.join(BOUNDARIES)}, not {self.boundary!r}")
        if not 1 <= self.species <= MAX_SPECIES:
            raise ValueError(f"species must be 1 to {MAX_SPECIES}, not {self.species}")
        if (self.mix is None) != (self.species == 1):
            raise ValueError("mix is [G, S] for S > 1 species and None for one species")

    def to(self, device: torch.device | str) -> World:
        return replace(
            self, **{k: v.to(device) for k, v in self.__dict__.items() if isinstance(v, torch.Tensor)}
        )

    def group_walls(self) -> torch.Tensor | None:
        """[G, H, W] bool, True on each group's simulation's walls; None without walls."""
        return None if self.wall is None else (self.wall != 0).repeat_interleave(self.species, 0)

    def free_food(self) -> torch.Tensor | None:
        """food as the backends add it: 0 on walls (walls hold no trail, food included)."""
        walls = self.group_walls()
        if self.food is None or walls is None:
            return self.food
        return torch.where(walls, 0.0, self.food)

    def simulations(self, groups: int) -> int:
        """B, the number of simulations of a batch of `groups` groups."""
        if groups % self.species:
            raise ValueError(f"{groups} groups are not whole simulations of {self.species} species")
        return groups // self.species


EMPTY_WORLD = World()


# ---------------------------------------------------------------------------------------------
# The backend contract.

Phase = Callable[[str], AbstractContextManager]


def untimed(name: str) -> AbstractContextManager:
    """The phase wrapper of a step that nobody times: it wraps nothing."""
    return nullcontext()


@runtime_checkable
class Simulation(Protocol):
    """What every backend is: B groups (api.World) advanced step by step, exactly as the reference.

    Backends register in kernels/__init__.py and are built as
    ``Backend(state, tables, world=None, device=None, **options)``: state and tables hold one
    entry per group; world None is the empty torus; device None is the state's device (the
    backend moves state, tables and world there itself, so a state spawned on the host is
    copied once). Backend-specific tuning comes only as keyword-only options with defaults,
    none of which changes a result.
    """

    name: ClassVar[str]  # the registry's name of the backend
    # The spatial dimensions of its state (State: position [B, dims, N], trail [B, *grid]); the
    # render side builds a backend only for presets of its dimensions (render/sim/simulation.py),
    # and only the look (render/look/) reads a trail's cells as an image.
    dims: ClassVar[int]
    phases: ClassVar[tuple[str, ...]]  # the names profiled_step may pass to its `phase`

    def __init__(
        self,
        state: State,
        tables: Tables,
        world: World | None = None,
        device: torch.device | str | None = None,
    ) -> None: ...

    @property
    def state(self) -> State:
        """A snapshot of the current state, equal to the reference's (agents in spawn order)."""
        ...

    @property
    def trail(self) -> torch.Tensor:
        """[B, H, W] float32, the current trail (it may be a live buffer: copy it to keep it)."""
        ...

    @property
    def agents(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(position [B, 2, N] int32, heading [B, N] int16) of every agent, in whatever order
        the backend keeps them (the same agents as `state`, perhaps in other lanes; live buffers:
        copy them to keep them). For what does not depend on the order (sums over cells), without
        the cost of `state` (the trail's copy, the agents put back in spawn order)."""
        ...

    def advance(self, steps: int) -> None:
        """Advance every group by `steps` steps (asynchronously on a GPU)."""
        ...

    def eager_step(self) -> None:
        """One step as plain launches, never a graph replay, so a profiler sees each kernel."""
        ...

    def retune(
        self, tables: Tables, mix: torch.Tensor | None = None, food: torch.Tensor | None = None
    ) -> None:
        """Step with these tables from the next step on (keyframed parameters); with mix
        ([G, S] float32) the world's new interaction, with food ([G, H, W] float32) its new food
        maps (kept off the walls, as World.free_food). Shapes and dtypes are the constructor's
        (a world's map can be changed, not added); the state is untouched. The Triton backend
        copies the values into the buffers its CUDA graphs read, so it keeps its graphs."""
        ...

    def profiled_step(self, phase: Phase) -> None:
        """One step like eager_step, each of its phases (names in `phases`) run inside
        ``with phase(name):``, e.g. torch.profiler.record_function."""
        ...

    @staticmethod
    def unusable_on(device: torch.device) -> str | None:
        """Why the backend cannot run on `device` (a message that says what to use instead), or
        None where it can; asked before anything is allocated."""
        ...

    @staticmethod
    def device_bytes(agents: int) -> tuple[float, float]:
        """(bytes per agent, bytes per cell of its map) that one group of `agents` agents needs
        on the device at its peak: its state, buffers and a step's temporaries."""
        ...


# the contract's names, with the plain numbers and ModelParams of kernels/limits.py
__all__ = [
    "BOUNDARIES",
    "EMPTY_WORLD",
    "FRAC_BITS",
    "HEADINGS",
    "HEADING_BITS",
    "HEADING_MASK",
    "MAX_CANVAS",
    "MAX_DISTANCE",
    "MAX_SPECIES",
    "MIN_COEFFICIENT",
    "ModelParams",
    "ONE",
    "Phase",
    "Simulation",
    "State",
    "TRAIL_FLOOR",
    "Tables",
    "U32",
    "UNIT_BITS",
    "World",
    "untimed",
]
