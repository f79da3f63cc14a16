"""The contract every backend keeps: state, per-simulation tables, and the integer arithmetic.

Numbers that must agree bit for bit across backends (see docs/model.md):

- Headings are integers on a circle of ``HEADINGS`` steps (12 bits).
- Positions are int32 fixed point with ``FRAC_BITS`` fractional bits (16.16); cells are
  ``position >> FRAC_BITS``. Wrap-around is a compare and an add, never a float modulo.
- Sensor offsets and step vectors are per-simulation integer lookup tables, built once from an
  exactly computed unit circle (Decimal Taylor series, independent of the platform's libm).
- Randomness is ``lowbias32`` (a 32-bit integer hash) of (seed, step, agent), never torch.rand.
- Deposits are int32 counts; the trail is float32, updated in one fixed order of operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

import numpy as np
import torch

HEADING_BITS = 12
HEADINGS = 1 << HEADING_BITS
HEADING_MASK = HEADINGS - 1
FRAC_BITS = 16
ONE = 1 << FRAC_BITS
UNIT_BITS = 30  # fixed point of the exact unit circle
MAX_CANVAS = 16384  # keeps (canvas + offsets) << FRAC_BITS inside int32
MAX_DISTANCE = 255.0  # sensor distance and step size, pixels
U32 = 0xFFFFFFFF

# Trail values below this are flushed to zero, so no backend ever meets a subnormal float
# (GPUs may flush them, CPUs do not). Coefficients are 0 or >= MIN_COEFFICIENT, which keeps
# every intermediate product of normal trail values normal.
TRAIL_FLOOR = 2.0**-100
MIN_COEFFICIENT = 2.0**-20

SPAWN_X_STREAM = 0x5EED0001
SPAWN_Y_STREAM = 0x5EED0002  # also the disk spawn's radius
SPAWN_ANGLE_STREAM = 0x5EED0003
SPAWN_HEADING_STREAM = 0x5EED0004
SPAWN_CELL_STREAM = 0x5EED0005  # the cell of `image` spawns and of agents moved off walls
SPAWN_SUBCELL_STREAM = 0x5EED0006  # where in that cell (16 bits of x, 16 of y)
SPECIES_STREAM = 0x5BEC1E50  # seeds of species 1, 2, 3 of a simulation

BOUNDARIES = ("wrap", "reflect", "clamp")
MAX_SPECIES = 4


@dataclass(frozen=True)
class ModelParams:
    """One simulation's parameters in the model's own units (degrees, pixels)."""

    sensor_angle: float
    sensor_distance: float
    turn_angle: float
    step_size: float
    deposit: float
    diffuse: float
    decay: float
    seed: int


@dataclass
class State:
    """The whole simulated world of B simulations sharing one canvas size.

    position: [B, 2, N] int32, fixed point 16.16, row 0 is x, row 1 is y, in [0, size << 16)
    heading:  [B, N] int16, integer angle in [0, HEADINGS)
    trail:    [B, H, W] float32, >= 0, no subnormals
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
    def height(self) -> int:
        return self.trail.shape[1]

    @property
    def width(self) -> int:
        return self.trail.shape[2]

    def to(self, device: torch.device | str) -> State:
        return State(*(t.to(device) for t in (self.position, self.heading, self.trail, self.step)))

    def clone(self) -> State:
        return State(*(t.clone() for t in (self.position, self.heading, self.trail, self.step)))


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
# Exact integer helpers shared by every backend's host side.


def lowbias32_int(x: int) -> int:
    """The 32-bit integer hash (Chris Wellons' lowbias32) on a Python int."""
    x &= U32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & U32
    x ^= x >> 15
    x = (x * 0x846CA68B) & U32
    x ^= x >> 16
    return x


def _mul32(x: torch.Tensor, constant: int) -> torch.Tensor:
    """(x * constant) mod 2^32 for int64 tensors in [0, 2^32), without int64 overflow."""
    low = x * (constant & 0xFFFF)
    high = ((x * (constant >> 16)) & 0xFFFF) << 16
    return (low + high) & U32


def lowbias32(x: torch.Tensor) -> torch.Tensor:
    """lowbias32 on an int64 tensor of values in [0, 2^32); the Triton kernels use uint32."""
    x = x & U32
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def step_key(seed_key: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
    """[B] int64 key of one step of each simulation: lowbias32(seed_key ^ lowbias32(step))."""
    return lowbias32(seed_key ^ lowbias32(step.to(torch.int64) & U32))


def turn_bits(seed_key: torch.Tensor, step: torch.Tensor, agents: int) -> torch.Tensor:
    """[B, N] bool, the random turn direction of every agent in this step (True: turn +)."""
    key = step_key(seed_key, step)[:, None]
    agent = torch.arange(agents, dtype=torch.int64, device=seed_key.device)[None, :]
    return (lowbias32(agent ^ key) >> 31) == 1


# ---------------------------------------------------------------------------------------------
# The exact unit circle and the lookup tables built on it.


def _decimal_cos_sin(turns: Fraction) -> tuple[Decimal, Decimal]:
    """cos and sin of an angle given in turns, to ~50 digits, by Taylor series."""
    with localcontext() as context:  # never the caller's precision or rounding
        context.prec, context.rounding = 60, ROUND_HALF_EVEN
        pi = Decimal("3.14159265358979323846264338327950288419716939937510582097494")
        x = Decimal(turns.numerator) * 2 * pi / Decimal(turns.denominator)
        cos, sin, term_c, term_s = Decimal(0), Decimal(0), Decimal(1), x
        for n in range(40):
            cos += term_c
            sin += term_s
            term_c = -term_c * x * x / ((2 * n + 1) * (2 * n + 2))
            term_s = -term_s * x * x / ((2 * n + 2) * (2 * n + 3))
        return +cos, +sin


@lru_cache(maxsize=1)
def unit_circle() -> tuple[tuple[int, int], ...]:
    """(cos, sin) of every heading, rounded to UNIT_BITS fixed point, platform independent.

    Only the first octant is summed; the rest follows from symmetry so that the table is
    exactly symmetric (a heading and its mirror move agents by exactly mirrored vectors).
    """
    octant = HEADINGS // 8
    first = []
    for h in range(octant + 1):
        cos, sin = _decimal_cos_sin(Fraction(h, HEADINGS))
        scale = 1 << UNIT_BITS
        first.append(
            (
                int((cos * scale).to_integral_value(rounding=ROUND_HALF_EVEN)),
                int((sin * scale).to_integral_value(rounding=ROUND_HALF_EVEN)),
            )
        )
    table = []
    for h in range(HEADINGS):
        quadrant, r = divmod(h, HEADINGS // 4)
        c, s = first[r] if r <= octant else first[HEADINGS // 4 - r][::-1]
        for _ in range(quadrant):
            c, s = -s, c
        table.append((c, s))
    return tuple(table)


def _round_half_even(value: Fraction) -> int:
    return round(value)  # Fraction.__round__ rounds half to even, exactly


def _divide_half_even(numerator: int, denominator: int) -> int:
    """numerator / denominator (denominator > 0) rounded half to even, in integers."""
    quotient, remainder = divmod(numerator, denominator)  # floor: 0 <= remainder < denominator
    if 2 * remainder > denominator or (2 * remainder == denominator and quotient & 1):
        quotient += 1
    return quotient


@lru_cache(maxsize=256)
def vector_table(distance: float) -> tuple[tuple[int, int], ...]:
    """16.16 (dx, dy) of a vector of `distance` pixels at every heading, exactly rounded:
    unit * distance * ONE / 2^UNIT_BITS with distance = n / d, a float's exact ratio.

    Integer arithmetic rather than Fractions (a sweep of 128 jobs spent 12 s here), and cached:
    a sweep's jobs mostly share their distances."""
    n, d = float(distance).as_integer_ratio()
    numerator, denominator = n * ONE, d << UNIT_BITS
    return tuple(
        (_divide_half_even(c * numerator, denominator), _divide_half_even(s * numerator, denominator))
        for c, s in unit_circle()
    )


def degrees_to_heading(degrees: float) -> int:
    """An angle in degrees as a whole number of heading steps (round half to even)."""
    return _round_half_even(Fraction(degrees) * HEADINGS / 360)


def float32_nearest(value: Fraction) -> float:
    """The float32 nearest to an exact value (ties to even), as a Python float holding it."""
    guess = np.float32(float(value))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    best = min(candidates, key=lambda c: (abs(Fraction(float(c)) - value), int(c.view(np.int32)) & 1))
    return float(best)


def coefficients(params: ModelParams) -> tuple[float, float, float, float]:
    """(deposit, keep, spread, retain) rounded to float32; tiny values snap to 0."""

    def snap(value: Fraction) -> float:
        v = float32_nearest(value)
        return 0.0 if v < MIN_COEFFICIENT else v

    diffuse, decay = Fraction(params.diffuse), Fraction(params.decay)
    return (snap(Fraction(params.deposit)), snap(1 - diffuse), snap(diffuse / 9), snap(1 - decay))


def build_tables(params: Sequence[ModelParams], device: torch.device | str = "cpu") -> Tables:
    """Lookup tables and float32 coefficients for a batch of simulations."""
    sense = [vector_table(p.sensor_distance) for p in params]
    step = [vector_table(p.step_size) for p in params]
    coeff = [coefficients(p) for p in params]
    f32 = dict(dtype=torch.float32)
    tables = Tables(
        sense_offset=torch.tensor(sense, dtype=torch.int32),
        step_offset=torch.tensor(step, dtype=torch.int32),
        sensor_turn=torch.tensor([degrees_to_heading(p.sensor_angle) for p in params], dtype=torch.int32),
        turn=torch.tensor([degrees_to_heading(p.turn_angle) for p in params], dtype=torch.int32),
        deposit=torch.tensor([c[0] for c in coeff], **f32),
        keep=torch.tensor([c[1] for c in coeff], **f32),
        spread=torch.tensor([c[2] for c in coeff], **f32),
        retain=torch.tensor([c[3] for c in coeff], **f32),
        seed_key=torch.tensor([lowbias32_int(p.seed) for p in params], dtype=torch.int64),
    )
    return tables.to(device)


# ---------------------------------------------------------------------------------------------
# Spawning: the initial state, in integers and correctly rounded float64 operations, so that it is
# the same on every device it is computed on (a GPU spawns a sweep's millions of agents in
# milliseconds; the host took 0.12 s per million).

SPAWNS = ("random", "disk", "ring", "center", "image")


def species_seed(seed: int, species: int) -> int:
    """The seed of one species of a simulation: the simulation's own seed for species 0 (so one
    species is exactly the plain model), a hash of it for the others."""
    if species == 0:
        return seed
    return lowbias32_int(seed ^ lowbias32_int(SPECIES_STREAM + species))


def brightness_table(scale: float) -> torch.Tensor:
    """[256] float32: an 8-bit brightness v as trail, float32(v / 255 * scale) exactly rounded,
    0 below TRAIL_FLOOR (so image trails and food keep the no-subnormal rule)."""
    values = [float32_nearest(Fraction(v, 255) * Fraction(scale)) for v in range(256)]
    return torch.tensor([0.0 if v < TRAIL_FLOOR else v for v in values], dtype=torch.float32)


def _stream(seed: int, stream: int, agents: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """[N] int64 uniform 32-bit integers of one named random stream of one seed."""
    key = lowbias32_int(lowbias32_int(seed) ^ stream)
    return lowbias32(torch.arange(agents, dtype=torch.int64, device=device) ^ key)


def _weighted_cells(seed: int, weights: torch.Tensor, agents: int) -> torch.Tensor:
    """[2, N] int32 16.16 positions of N agents placed with probability proportional to the
    integer weights [H, W] of the cells, in integers only: agent i's cell is the first whose
    running total of weights exceeds (u * total) >> 32, and its place in the cell 32 more bits."""
    height, width = weights.shape
    running = torch.cumsum(weights.reshape(-1).to(torch.int64), 0)
    total = int(running[-1])
    if total <= 0:
        raise ValueError("no cell has weight: nothing to place agents on")
    u = _stream(seed, SPAWN_CELL_STREAM, agents, weights.device)
    # (u * total) >> 32 without overflowing int64: u = hi * 2^16 + lo
    target = ((u >> 16) * total + (((u & 0xFFFF) * total) >> 16)) >> 16
    cell = torch.searchsorted(running, target, right=True)
    within = _stream(seed, SPAWN_SUBCELL_STREAM, agents, weights.device)
    x = (cell % width) << FRAC_BITS | (within & 0xFFFF)
    y = (cell // width) << FRAC_BITS | (within >> 16)
    return torch.stack([x, y]).to(torch.int32)


def _spawn_one(
    seed: int,
    agents: int,
    width: int,
    height: int,
    spawn: str,
    radius: float,
    density: torch.Tensor | None,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor]:
    """position [2, N] int32 and heading [N] int16 of one simulation, computed on `device`."""
    heading = _stream(seed, SPAWN_HEADING_STREAM, agents, device) >> (32 - HEADING_BITS)
    if spawn == "image":
        return _weighted_cells(seed, density, agents), heading.to(torch.int16)
    if spawn == "random":
        x = (_stream(seed, SPAWN_X_STREAM, agents, device) * (width << FRAC_BITS)) >> 32
        y = (_stream(seed, SPAWN_Y_STREAM, agents, device) * (height << FRAC_BITS)) >> 32
        return torch.stack([x, y]).to(torch.int32), heading.to(torch.int16)
    circle = torch.tensor(unit_circle(), dtype=torch.float64, device=device) / (1 << UNIT_BITS)
    angle = _stream(seed, SPAWN_ANGLE_STREAM, agents, device) >> (32 - HEADING_BITS)
    r_max = radius * min(width, height)
    if spawn == "disk":
        # float64 sqrt, multiply and round are correctly rounded by IEEE 754: exact everywhere
        u = _stream(seed, SPAWN_Y_STREAM, agents, device).to(torch.float64) / 2.0**32
        r = r_max * torch.sqrt(u)
    elif spawn == "ring":
        r = torch.full((agents,), r_max, dtype=torch.float64, device=device)
        heading = (angle + HEADINGS // 2) & HEADING_MASK  # facing the centre
    else:  # center
        r = torch.zeros(agents, dtype=torch.float64, device=device)
    x = torch.round((width / 2 + r * circle[angle, 0]) * ONE).to(torch.int64) % (width << FRAC_BITS)
    y = torch.round((height / 2 + r * circle[angle, 1]) * ONE).to(torch.int64) % (height << FRAC_BITS)
    return torch.stack([x, y]).to(torch.int32), heading.to(torch.int16)


def _off_walls(seed: int, position: torch.Tensor, wall: torch.Tensor) -> torch.Tensor:
    """position [2, N] with every agent that stands on a wall moved to a free cell, chosen
    uniformly (by the same integer method as `image` spawns); the others stay."""
    width = wall.shape[1]
    on_wall = wall.reshape(-1)[(position[1] >> FRAC_BITS) * width + (position[0] >> FRAC_BITS)] != 0
    if not bool(on_wall.any()):
        return position
    free = _weighted_cells(seed ^ 0x3A11, (wall == 0).to(torch.int64), position.shape[1])
    return torch.where(on_wall[None, :], free, position)


def spawn(
    seeds: Sequence[int],
    agents: int,
    width: int,
    height: int,
    spawn: str = "random",
    radius: float = 0.35,
    device: torch.device | str = "cpu",
    density: torch.Tensor | None = None,
    wall: torch.Tensor | None = None,
) -> State:
    """The initial state of a batch: agents placed by `spawn`, an empty trail, step 0.

    radius is a fraction of the canvas's short side (disk and ring spawns). density: [H, W]
    integer weights of the `image` spawn (agents per cell in proportion). wall: [H, W], non-zero
    on walls; agents spawned on a wall are moved to a free cell. Computed on `device`, with the
    same result on every device.
    """
    if spawn not in SPAWNS:
        raise ValueError(f"spawn must be one of {', '.join(SPAWNS)}, not {spawn!r}")
    if spawn == "image" and (density is None or tuple(density.shape) != (height, width)):
        raise ValueError(f"the image spawn needs density weights of shape [{height}, {width}]")
    device = torch.device(device)
    density = None if density is None else density.to(device)
    parts = [_spawn_one(s, agents, width, height, spawn, radius, density, device) for s in seeds]
    if wall is not None:
        wall = wall.to(device)
        parts = [(_off_walls(s, p, wall), h) for s, (p, h) in zip(seeds, parts)]
    return State(
        position=torch.stack([p for p, _ in parts]),
        heading=torch.stack([h for _, h in parts]),
        trail=torch.zeros((len(seeds), height, width), dtype=torch.float32, device=device),
        step=torch.zeros((), dtype=torch.int64, device=device),
    )
