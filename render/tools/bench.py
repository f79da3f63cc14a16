"""`physarum bench`: honest step timings of every implementation, against the memory floor.

Protocol: develop the state >= 500 steps with the fastest backend, then time each
implementation from a copy of that developed state, with CUDA events after warm-up, median of
>= 7 repeats. The floor is the bytes a step must move (agent state and trail, each read
and written once) over the device-to-device copy bandwidth measured in the same process.
"""

from __future__ import annotations

import functools
import json
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ...kernels import get_backend, reference
from ...kernels.api import ModelParams, State, Tables
from ...kernels.exact import build_tables
from ...kernels.prototype import PrototypeSimulation
from ...kernels.spawn import spawn
from ..run.machine import device_name

BENCH_PARAMS = ModelParams(
    sensor_angle=22.5,
    sensor_distance=9,
    turn_angle=45,
    step_size=1,
    deposit=5,
    diffuse=1.0,
    decay=0.1,
    seed=7,
)


@dataclass(frozen=True)
class Config:
    name: str
    batch: int
    agents: int  # per simulation
    width: int
    height: int
    gpu_only: bool = False

    @property
    def agent_steps(self) -> int:
        return self.batch * self.agents

    def floor_bytes(self) -> int:
        """Agent state (16.16 x, y and an int16 heading) and the float32 trail, read and written."""
        return 2 * self.batch * (self.agents * 10 + self.width * self.height * 4)


CONFIGS = {
    "S": Config("S", 1, 1_000_000, 1024, 1024, gpu_only=True),
    "L": Config("L", 1, 16_000_000, 4096, 4096, gpu_only=True),
    "XL": Config("XL", 1, 256_000_000, 16384, 16384, gpu_only=True),
    "X": Config("X", 64, 65_536, 256, 256, gpu_only=True),
    "CPU": Config("CPU", 1, 250_000, 512, 512),
}


def copy_bandwidth(device: torch.device) -> float:
    """Bytes per second of a large device-to-device copy, counting bytes read and written."""
    size = (1 << 30) if device.type == "cuda" else (1 << 27)
    source = torch.empty(size, dtype=torch.uint8, device=device).random_()
    target = torch.empty_like(source)
    return 2 * size / median_seconds(lambda: target.copy_(source), device, repeats=9)


def median_seconds(run: Callable[[], object], device: torch.device, repeats: int = 7) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1000)
        else:
            began = time.perf_counter()
            run()
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def launches_per_step(simulation, device: torch.device, steps: int = 4) -> float | None:
    """Kernels launched per step, counted by torch.profiler over plain (not graph) steps: the
    implementation's eager_step (api.Simulation)."""
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    step = simulation.eager_step
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    kernels = [
        e
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA
        and "memcpy" not in e.name.lower()
        and "memset" not in e.name.lower()
    ]
    return len(kernels) / steps


class CompiledReference:
    """torch.compile of the reference step, behind the simulation interface."""

    name = "torch.compile"

    def __init__(self, state: State, tables):
        self.state, self.tables = state, tables
        self.step = torch.compile(reference.step, dynamic=False)

    def advance(self, steps: int) -> None:
        for _ in range(steps):
            self.state = self.step(self.state, self.tables)

    def eager_step(self) -> None:
        self.advance(1)


def _implementations(device: torch.device, skip: set[str]) -> dict[str, Callable]:
    params = [BENCH_PARAMS]
    impls = {
        "prototype": lambda state, tables: PrototypeSimulation(state, params * state.batch),
        "torch": get_backend("torch"),
        # after the reference: the compiler's worker processes linger and take CPU time
        "torch.compile": CompiledReference,
    }
    if device.type == "cuda":
        impls["triton"] = get_backend("triton")
    return {k: v for k, v in impls.items() if k not in skip}


def develop(config: Config, device: torch.device, steps: int) -> tuple[State, object]:
    seeds = [BENCH_PARAMS.seed + i for i in range(config.batch)]
    params = [ModelParams(**{**BENCH_PARAMS.__dict__, "seed": s}) for s in seeds]
    tables = build_tables(params, device=device)
    state = spawn(seeds, config.agents, config.width, config.height, "random", device=device)
    backend = get_backend("triton" if device.type == "cuda" else "torch")
    simulation = backend(state, tables)
    simulation.advance(steps)
    return simulation.state.clone(), tables


# Steps per timed repeat: the Triton backend sorts its agents every SORT_EVERY (128) steps, so
# its repeats span a whole sort period and the sort's cost is counted, amortised.
STEPS_PER_REPEAT = {"triton": 128}
DEFAULT_STEPS_PER_REPEAT = 10


def bench_config(
    config: Config, device: torch.device, bandwidth: float, develop_steps: int, skip: set[str], log=print
) -> list[dict]:
    state, tables = develop(config, device, develop_steps)
    floor = config.floor_bytes() / bandwidth
    rows = []
    for name, make in _implementations(device, skip).items():
        try:
            simulation = make(state.clone(), tables)
            launches = launches_per_step(simulation, device)
            steps = STEPS_PER_REPEAT.get(name, DEFAULT_STEPS_PER_REPEAT)
            seconds = median_seconds(functools.partial(simulation.advance, steps), device) / steps
        except (torch.OutOfMemoryError, RuntimeError) as error:
            log(f"{config.name} {name}: skipped ({type(error).__name__}: {str(error).splitlines()[0]})")
            continue
        rows.append(_row(config, name, seconds, launches, floor))
        log(
            f"{config.name:>3} {name:<14} {seconds * 1e3:9.3f} ms/step  "
            f"{config.agent_steps / seconds:10.3e} agent-steps/s  x{seconds / floor:6.2f} floor  "
            f"launches/step {launches}"
        )
        del simulation
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if config.batch > 1 and "triton" in _implementations(device, skip):
        rows.append(_one_after_another(config, state, tables, device, floor, STEPS_PER_REPEAT["triton"], log))
    return rows


def _one_after_another(
    config: Config, state: State, tables, device: torch.device, floor: float, steps_per_repeat: int, log
) -> dict:
    """The batch's simulations run one after another with the Triton backend, for comparison
    with the batched run: each timed alone, times added."""
    seconds = 0.0
    for b in range(config.batch):
        one = State(
            state.position[b : b + 1].clone(),
            state.heading[b : b + 1].clone(),
            state.trail[b : b + 1].clone(),
            state.step.clone(),
        )
        one_tables = Tables(**{k: v[b : b + 1] for k, v in tables.__dict__.items()})
        simulation = get_backend("triton")(one, one_tables)
        seconds += median_seconds(lambda: simulation.advance(steps_per_repeat), device) / steps_per_repeat
    log(
        f"{config.name:>3} {'triton 1-by-1':<14} {seconds * 1e3:9.3f} ms/step  "
        f"{config.agent_steps / seconds:10.3e} agent-steps/s  x{seconds / floor:6.2f} floor"
    )
    return _row(config, "triton, one after another", seconds, 2.0 * config.batch, floor)


def _row(config: Config, name: str, seconds: float, launches: float | None, floor: float) -> dict:
    """One implementation's result on one configuration, as the JSON stores it."""
    return {
        "config": config.name,
        "implementation": name,
        "batch": config.batch,
        "agents": config.agents,
        "width": config.width,
        "height": config.height,
        "ms_per_step": seconds * 1e3,
        "agent_steps_per_s": config.agent_steps / seconds,
        "launches_per_step": launches,
        "achieved_gb_per_s": config.floor_bytes() / seconds / 1e9,
        "ratio_to_floor": seconds / floor,
    }


def triton_peak_memory(config: Config, device: torch.device, steps: int = 20) -> int:
    """Peak bytes allocated on the GPU by spawning a Triton simulation and running it."""
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    seeds = [BENCH_PARAMS.seed + i for i in range(config.batch)]
    tables = build_tables([ModelParams(**{**BENCH_PARAMS.__dict__, "seed": s}) for s in seeds], device=device)
    state = spawn(seeds, config.agents, config.width, config.height, "random")
    simulation = get_backend("triton")(state, tables, device=device)
    del state
    simulation.advance(steps)
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - base
    del simulation
    torch.cuda.empty_cache()
    return peak


def environment(device: torch.device, bandwidth: float) -> dict:
    info = {
        "device": device_name(device),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "copy_bandwidth_gb_per_s": bandwidth / 1e9,
        "cpu_threads": torch.get_num_threads(),
    }
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = None
    return info


def run_bench(
    configs: list[str],
    device: torch.device,
    out: Path | None,
    develop_steps: int = 500,
    skip: set[str] = frozenset(),
    log=print,
) -> dict:
    bandwidth = copy_bandwidth(device)
    log(f"copy bandwidth {bandwidth / 1e9:.0f} GB/s on {device}")
    document = {
        "environment": environment(device, bandwidth),
        "develop_steps": develop_steps,
        "protocol": "median of 7 CUDA-event-timed repeats after warm-up; a repeat is 128 steps "
        "for triton (one sort period) and 10 for the others",
        "triton_peak_memory_bytes": {},
        "results": [],
    }
    for name in configs:  # saved after each configuration, so a cut-off run keeps what it did
        document["results"] += bench_config(
            CONFIGS[name], device, bandwidth, develop_steps, set(skip), log=log
        )
        if device.type == "cuda" and "triton" not in skip:
            peak = triton_peak_memory(CONFIGS[name], device)
            document["triton_peak_memory_bytes"][name] = peak
            log(f"{name:>3} triton peak GPU memory of a run from spawn: {peak / 1e9:.2f} GB")
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(document, indent=2) + "\n")
    if out is not None:
        log(f"wrote {out}")
    return document
