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


def brightness_table(scale: float) -> torch.Tensor:
    """[256] float32: an 8-bit brightness v as trail, float32(v / 255 * scale) exactly rounded,
    0 below TRAIL_FLOOR (so image trails and food keep the no-subnormal rule)."""
    values = [float32_nearest(Fraction(v, 255) * Fraction(scale)) for v in range(256)]
    return torch.tensor([0.0 if v < TRAIL_FLOOR else v for v in values], dtype=torch.float32)
