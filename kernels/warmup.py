"""Triton's kernel cache filled ahead of a render (`physarum warmup`): the kernels a simulation
launches, compiled at once on threads instead of one after another at its first step.

A render compiles each kernel the first time it launches it (the sort's two, then the agent and
diffuse kernels: about 0.8 s each on the H200 host, and a new machine or release starts with an
empty cache). `launches` records the launches of a simulation's first step (the sort included)
without running a kernel: each launcher is called with the simulation's own buffers, so every
argument specialises as the render's will (dtypes, 16-byte alignment, sizes divisible by 16),
while a stand-in for each kernel keeps the call. `compile_all` then compiles the recorded calls
with `JITFunction.warmup` under Triton's AsyncCompileMode (Triton 3.4 and later: the compiles run
on a thread pool; LLVM and ptxas run outside the interpreter lock), or one after another where
Triton has no such mode. The compiled kernels land in Triton's cache (TRITON_CACHE_DIR), where
the render finds them; nothing here changes what a kernel computes.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import torch

from . import triton3d_kernels, triton_kernels, triton_sort

# the modules whose @triton.jit kernels a step launches (their launchers look them up by name)
KERNEL_MODULES = (triton_kernels, triton_sort, triton3d_kernels)
# the sort's recording runs on copies of the agents' buffers (its copies back would overwrite
# them): above this many agents the sort's kernels are left to the render's first step
MAX_SORT_COPY_AGENTS = 1 << 26


@dataclass(frozen=True)
class Launch:
    """One recorded launch: the kernel, its grid, its arguments as the launcher gave them."""

    kernel: object
    grid: tuple
    args: tuple
    kwargs: dict

    @property
    def name(self) -> str:
        return getattr(getattr(self.kernel, "fn", None), "__name__", None) or repr(self.kernel)


class _Recorder:
    """Stands in for a @triton.jit kernel: `kernel[grid](...)` records the call, runs nothing."""

    def __init__(self, kernel, calls: list[Launch]):
        self.kernel, self.calls = kernel, calls

    def __getitem__(self, grid):
        def record(*args, **kwargs):
            self.calls.append(Launch(self.kernel, grid, args, kwargs))

        return record


@contextlib.contextmanager
def recording() -> Iterator[list[Launch]]:
    """Inside, every kernel of KERNEL_MODULES launched through its launcher is recorded, not run."""
    calls: list[Launch] = []
    saved = []
    for module in KERNEL_MODULES:
        for name, value in vars(module).items():
            if hasattr(value, "warmup") and hasattr(value, "__getitem__"):  # a JITFunction
                saved.append((module, name, value))
    try:
        for module, name, value in saved:
            setattr(module, name, _Recorder(value, calls))
        yield calls
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def launches(simulation) -> list[Launch]:
    """The launches of a Triton simulation's first step, its sort included (on copies of the
    agents' buffers, up to MAX_SORT_COPY_AGENTS), recorded, not run: its state is unchanged.
    [] for a simulation of another backend."""
    inner = getattr(simulation, "simulation", simulation)  # a KeyframedSimulation's backend
    if not hasattr(inner, "_launch_step") or not hasattr(inner, "_position"):
        return []
    with inner._on_device(), recording() as calls:
        position, heading, agent_id = inner._position, inner._heading, inner._agent_id
        grid = getattr(inner, "_grid", None)  # a 3D simulation's (D, H, W)
        if agent_id is not None and heading.numel() <= MAX_SORT_COPY_AGENTS:
            copies = (position.clone(), heading.clone(), agent_id.clone())
            if grid is None:
                triton_sort.sort_agents(*copies, inner.trail.shape[2])
            else:
                triton_sort.sort_agents3d(*copies, grid)
        inner._launch_step(inner._parity)  # the counts it may clear are zero on entry
    return calls


def _key(launch: Launch) -> tuple:
    """What makes two launches compile the same kernel (near enough: a repeat compiles nothing)."""

    def kind(value):
        if isinstance(value, torch.Tensor):
            return ("tensor", value.dtype, value.data_ptr() % 16 == 0)
        if isinstance(value, int) and not isinstance(value, bool):
            return ("int", value % 16 == 0, value == 1)
        return ("value", value)

    return (id(launch.kernel), tuple(map(kind, launch.args)), tuple(sorted(launch.kwargs.items())))


def compile_all(calls: list[Launch], threads: int | None = None) -> dict:
    """Compile every distinct recorded launch into Triton's cache (not run); at once on `threads`
    threads where Triton has AsyncCompileMode, else one after another. Returns what was done:
    kernels, seconds, whether in parallel."""
    unique = list({_key(call): call for call in calls}.values())
    threads = threads or min(len(unique), os.cpu_count() or 1) or 1
    began = time.perf_counter()
    try:
        from triton.runtime._async_compile import AsyncCompileMode
    except ImportError:  # Triton before 3.4: one after another
        AsyncCompileMode = None
    parallel = AsyncCompileMode is not None and threads > 1 and len(unique) > 1
    with ThreadPoolExecutor(max(1, threads)) as pool:
        mode = AsyncCompileMode(pool) if parallel else contextlib.nullcontext()
        with mode:
            for call in unique:
                call.kernel.warmup(*call.args, grid=call.grid, **call.kwargs)
    return {
        "kernels": [call.name for call in unique],
        "seconds": round(time.perf_counter() - began, 3),
        "parallel": parallel,
    }
