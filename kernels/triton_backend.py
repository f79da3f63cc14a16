"""The Triton backend behind the common simulation interface (see kernels/__init__).

A step is two launches (kernels/triton_kernels.py): the agent kernel, then the diffuse kernel.
The trail and the deposit counts are double-buffered and alternate by step parity: the step with
parity p reads trail[p], counts into counts[p], writes trail[1 - p] and zeroes counts[1 - p]
for the next step, so no launch clears a buffer another program of it reads. The step counter
lives on the device and is incremented by the diffuse kernel, so a CUDA graph of a chunk of
steps replays correctly. Results are byte-identical to kernels/reference.py.

Agents are stored in spawn order at first, which is random in space, so neighbouring lanes of a
warp would sense and deposit all over the canvas. Every `sort_every` steps (SORT_EVERY by
default) the agents of each simulation are reordered by the cell they stand in (tiled order,
triton_sort.sort_agents), between steps and outside any graph. Nothing in a step depends on
the order of the agents except the random turn bit, which hashes the agent's index in spawn
order; an `agent_id` buffer [B, N] int32 keeps that index for every lane, and `state` scatters
the agents back into spawn order. Deposits are integer counts, so the trail is order-free too.

On CUDA, chunks of steps are captured once per (chunk length, start parity) and replayed; chunks
end where a sort is due. With TRITON_INTERPRET=1 (set before Python starts) the kernels run on
CPU tensors, without graphs.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from dataclasses import replace

import torch

from .api import EMPTY_WORLD, HEADINGS, Phase, State, Tables, World, untimed
from .triton_kernels import MAX_GRID_YZ, diffuse_and_decay, move_agents
from .triton_sort import SORT_SEGMENT, sort_agents

# Steps per captured CUDA graph: long enough that launch overhead vanishes (it is a step's
# cost on small canvases), short enough that capturing one is quick. Not tuned by measurement.
GRAPH_CHUNK = 64
# Remainders shorter than this run as eager launches instead of getting a graph of their own.
GRAPH_MIN_STEPS = 2
# Steps between spatial sorts of the agents (0: never sort): sorted lanes sense and count in
# nearby memory, locality fades slowly after a sort, and a sort costs a few launches and about
# 35 bytes per agent of temporaries (docs/benchmarks.md, "Measurements behind the code: kernels").
SORT_EVERY = 128
# Past this many bytes per count map, one map cleared by a memset instead of two.
COUNTS_DOUBLE_BUFFER_BYTES = 512 << 20

_TABLE_DTYPES = {
    "sense_offset": torch.int32,
    "step_offset": torch.int32,
    "sensor_turn": torch.int32,
    "turn": torch.int32,
    "deposit": torch.float32,
    "keep": torch.float32,
    "spread": torch.float32,
    "retain": torch.float32,
    "seed_key": torch.int64,
}


def interpreter_mode() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def _prepare_tables(tables: Tables, batch: int, device: torch.device) -> Tables:
    """The tables on `device`, contiguous, after checking their dtypes and batch size."""
    prepared = {}
    for name, dtype in _TABLE_DTYPES.items():
        value = getattr(tables, name)
        if value.dtype != dtype or value.shape[0] != batch:
            raise ValueError(
                f"tables.{name}: expected [{batch}, ...] {dtype}, got {list(value.shape)} {value.dtype}"
            )
        prepared[name] = value.to(device).contiguous()
    for name in ("sense_offset", "step_offset"):
        if prepared[name].shape != (batch, HEADINGS, 2):
            raise ValueError(
                f"tables.{name}: expected [{batch}, {HEADINGS}, 2], got {list(prepared[name].shape)}"
            )
    return Tables(**prepared)


def _prepare_world(world: World, groups: int, height: int, width: int, device: torch.device) -> World:
    """The world's tensors on `device`, contiguous, in the kernels' dtypes, food 0 on walls."""
    simulations = world.simulations(groups)
    mix = wall = food = None
    if world.mix is not None:
        mix = world.mix.to(device, torch.float32).contiguous()
        if mix.shape != (groups, world.species):
            raise ValueError(f"world.mix: expected [{groups}, {world.species}], got {list(mix.shape)}")
    if world.wall is not None:
        wall = (world.wall != 0).to(device, torch.uint8).contiguous()
        if wall.shape != (simulations, height, width):
            raise ValueError(
                f"world.wall: expected [{simulations}, {height}, {width}], got {list(wall.shape)}"
            )
    if world.food is not None:
        if world.food.shape != (groups, height, width):
            raise ValueError(
                f"world.food: expected [{groups}, {height}, {width}], got {list(world.food.shape)}"
            )
        food = world.free_food().to(device, torch.float32).contiguous()
    return World(species=world.species, boundary=world.boundary, mix=mix, wall=wall, food=food)


def _own(tensor: torch.Tensor, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """A contiguous copy on `device` that nothing else holds: moving or converting already made
    one (a state spawned on the host costs no second copy on the GPU); otherwise clone."""
    owned = tensor.to(device, dtype).contiguous()
    return owned.clone() if owned.data_ptr() == tensor.data_ptr() else owned


class TritonSimulation:
    """B groups advanced by the Triton kernels, behind the Simulation protocol (api.Simulation)."""

    name = "triton"
    dims = 2
    # The agent kernel fuses four phases of the model; a sort runs before a step when one is due.
    phases = ("sort", "sense/steer/move/deposit", "diffuse")

    def __init__(
        self,
        state: State,
        tables: Tables,
        world: World | None = None,
        device: torch.device | str | None = None,
        *,
        sort_every: int = SORT_EVERY,
        graphs: bool | None = None,
    ):
        """sort_every: steps between spatial sorts of the agents, 0 never sorts.
        graphs: whether chunks of steps run as CUDA graphs, each captured once and replayed.
        None (the default): where they work, on a CUDA device with compiled (not interpreted)
        kernels; False: never, every step as plain launches; True: always, which off CUDA only
        a stand-in for torch.cuda.graph can serve (tests emulate graphs on the CPU so). A capture
        that fails warns and falls back to plain launches.
        Results are the same with any of these options; only the speed differs."""
        if sort_every < 0:
            raise ValueError(f"sort_every must be >= 0, got {sort_every}")
        device = torch.device(device) if device is not None else state.trail.device
        if device.type != "cuda" and not interpreter_mode():
            raise RuntimeError(
                "the triton backend needs CUDA tensors, or TRITON_INTERPRET=1 "
                "set before Python starts to run its kernels on the CPU"
            )
        if state.batch > MAX_GRID_YZ:
            raise ValueError(f"at most {MAX_GRID_YZ} simulations per batch, got {state.batch}")
        self._tables = _prepare_tables(tables, state.batch, device)
        self._world = _prepare_world(world or EMPTY_WORLD, state.batch, state.height, state.width, device)
        self._position = _own(state.position, device, torch.int32)
        self._heading = _own(state.heading, device, torch.int16)
        trail = _own(state.trail, device, torch.float32)
        self._trails = (trail, torch.empty_like(trail))
        counts = torch.zeros(trail.shape, dtype=torch.int32, device=device)
        # Two count maps let the diffuse kernel clear the next step's while it reads this
        # step's; past COUNTS_DOUBLE_BUFFER_BYTES one map and a memset save the memory.
        single = counts.numel() * 4 > COUNTS_DOUBLE_BUFFER_BYTES
        self._counts = (counts, counts if single else torch.zeros_like(counts))
        self._step = state.step.to(device, torch.int64).reshape(()).clone()
        self._sort_every = sort_every
        # The spawn-order index of the agent in each lane; None where agents never change lanes.
        self._agent_id = (
            torch.arange(state.agents, dtype=torch.int32, device=device).repeat(state.batch, 1)
            if sort_every
            else None
        )
        self._steps_since_sort = sort_every  # due at once: spawns are random in space
        self._parity = 0  # index of the buffers holding the current trail and next counts
        self._use_graphs = (device.type == "cuda" and not interpreter_mode()) if graphs is None else graphs
        self._compiled = False  # kernels are compiled (by an eager step) before any capture
        self._graphs: dict[tuple[int, int], torch.cuda.CUDAGraph] = {}

    def advance(self, steps: int) -> None:
        """Advance every simulation by `steps` steps (asynchronously on CUDA)."""
        if steps < 0:
            raise ValueError(f"steps must be >= 0, got {steps}")
        with self._on_device():
            self._advance(steps)

    def retune(
        self, tables: Tables, mix: torch.Tensor | None = None, food: torch.Tensor | None = None
    ) -> None:
        """New tables (and the world's mix or food) from the next step on, copied into the
        buffers the captured CUDA graphs read: the graphs stay valid."""
        new = _prepare_tables(tables, self.trail.shape[0], tables.sense_offset.device)  # checked, not moved
        for name in _TABLE_DTYPES:
            getattr(self._tables, name).copy_(getattr(new, name))  # one copy each, host to device
        if food is not None:  # off the walls, which live on the device
            food = replace(self._world, food=food.to(self._step.device, torch.float32)).free_food()
        for name, value in (("mix", mix), ("food", food)):
            mine = getattr(self._world, name)
            if value is not None and (mine is None or mine.shape != value.shape):
                found = "none" if mine is None else list(mine.shape)
                raise ValueError(
                    f"world.{name}: expected {found} as the constructor's, got {list(value.shape)}"
                )
            if value is not None:
                mine.copy_(value)

    def _on_device(self):
        """Triton launches (and graph captures) go to the current CUDA device: make it ours."""
        device = self._step.device
        return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()

    def _advance(self, steps: int) -> None:
        while steps > 0:
            self._sort_if_due()
            chunk = min(steps, GRAPH_CHUNK, self._steps_before_sort())
            graph = self._graph(chunk) if chunk >= GRAPH_MIN_STEPS else None
            if graph is None:
                self._eager_step()
                steps -= 1
            else:
                graph.replay()
                self._parity ^= chunk & 1
                self._steps_since_sort += chunk
                steps -= chunk

    def eager_step(self) -> None:
        """One step as two plain launches, never a graph replay (profilers see each kernel),
        preceded by the sort's launches when one is due."""
        self.profiled_step(untimed)

    def profiled_step(self, phase: Phase) -> None:
        """eager_step with the sort (when due) and each of the two launches inside phase(name)."""
        with self._on_device():
            self._sort_if_due(phase)
            self._eager_step(phase)

    @staticmethod
    def unusable_on(device: torch.device) -> str | None:
        """Triton needs a CUDA GPU, or its CPU interpreter (TRITON_INTERPRET=1, for tests)."""
        if torch.device(device).type == "cuda" or interpreter_mode():
            return None
        return (
            "needs a CUDA GPU and none is in use here; use --backend torch (or set "
            "TRITON_INTERPRET=1 before Python starts, for tests)"
        )

    @staticmethod
    def device_bytes(agents: int) -> tuple[float, float]:
        """Per agent its state (16.16 x and y, heading), its agent id and its share of a sort
        segment's temporaries (about 40 bytes per agent of a segment of at most SORT_SEGMENT);
        per cell the two trail buffers and two count maps (4 bytes each) and 8 bytes of slack."""
        return 14 + 40 * min(1.0, SORT_SEGMENT / max(1, agents)), 4 * 2 + 4 * 2 + 8

    def _eager_step(self, phase: Phase = untimed) -> None:
        self._launch_step(self._parity, phase)
        self._parity ^= 1
        self._steps_since_sort += 1
        self._compiled = True

    def _steps_before_sort(self) -> int:
        """Steps that may run before the next sort (any number where sorting is off)."""
        return self._sort_every - self._steps_since_sort if self._sort_every else GRAPH_CHUNK

    def _sort_if_due(self, phase: Phase = untimed) -> None:
        """Reorder the agents by cell when sort_every steps have passed since the last sort;
        in place, so the buffers captured graphs point at stay the live ones."""
        if self._sort_every and self._steps_since_sort >= self._sort_every:
            with phase("sort"):
                sort_agents(self._position, self._heading, self._agent_id, self.trail.shape[2])
            self._steps_since_sort = 0

    @property
    def trail(self) -> torch.Tensor:
        """[B, H, W] float32 current trail; the live buffer, overwritten two steps later."""
        return self._trails[self._parity]

    @property
    def agents(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(position, heading) as the lanes hold them (sorted by cell, not in spawn order)."""
        return self._position, self._heading

    @property
    def state(self) -> State:
        """A snapshot of the current state, equal to what the reference would hold (agents in
        spawn order, whatever order the lanes hold them in)."""
        if self._agent_id is None:
            position, heading = self._position.clone(), self._heading.clone()
        else:
            lane_agent = self._agent_id.to(torch.int64)
            position = torch.empty_like(self._position).scatter_(
                2, lane_agent[:, None, :].expand_as(self._position), self._position
            )
            heading = torch.empty_like(self._heading).scatter_(1, lane_agent, self._heading)
        return State(position=position, heading=heading, trail=self.trail.clone(), step=self._step.clone())

    def _launch_step(self, parity: int, phase: Phase = untimed) -> None:
        """The two launches of one step whose buffers have the given parity."""
        trail, next_trail = self._trails[parity], self._trails[parity ^ 1]
        counts, next_counts = self._counts[parity], self._counts[parity ^ 1]
        with phase("sense/steer/move/deposit"):
            move_agents(
                self._position,
                self._heading,
                self._agent_id,
                trail,
                counts,
                self._step,
                self._tables,
                self._world,
            )
        with phase("diffuse"):
            diffuse_and_decay(trail, counts, next_counts, next_trail, self._step, self._tables, self._world)

    def _graph(self, chunk: int) -> torch.cuda.CUDAGraph | None:
        """The CUDA graph of `chunk` steps from the current parity, captured on first use;
        None where graphs are off, the kernels are not compiled yet, or capture failed."""
        if not (self._use_graphs and self._compiled):
            return None
        key = (chunk, self._parity)
        if key not in self._graphs:
            graph = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(graph):
                    for offset in range(chunk):
                        self._launch_step(self._parity ^ (offset & 1))
            except RuntimeError as error:  # capture does not run the launches: state unchanged
                warnings.warn(f"CUDA graph capture failed, using eager launches: {error}", stacklevel=2)
                self._use_graphs = False
                return None
            self._graphs[key] = graph
        return self._graphs[key]
