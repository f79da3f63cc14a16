"""Where chunks run on this host: the devices named by --devices, the sweep's own process (one
device), or one worker process per device (several).

Executors call on_start(number) when a chunk starts and on_done(number, outcomes) when it ends,
in the calling thread, which alone writes the manifest."""

from __future__ import annotations

import multiprocessing
import os
import queue
import sys
import time

import torch

from ..base.errors import RenderError
from ..out.encoder_process import die_with_parent
from ..run import machine
from .chunk import chunk_outcomes, failed_outcomes


def parse_devices(text: str | None) -> list[str]:
    """--devices: 'all' (every CUDA GPU, else the CPU), 'cpu', or a list like cuda:0,cuda:1.
    A device may be named twice to run two workers on it."""
    if text is None:
        text = "all"
    if text.strip() == "all":
        # device_count, not is_available(): it asks NVML first and so leaves CUDA uninitialised
        # here, which lets the workers be forked (start_method)
        return [f"cuda:{i}" for i in range(torch.cuda.device_count())] or ["cpu"]
    devices = []
    for item in (t.strip() for t in text.split(",")):
        if item:
            devices.append(_device(item, text))
    if not devices:
        raise RenderError(f"--devices {text!r}: name at least one device, e.g. cpu or cuda:0,cuda:1")
    return devices


def _nvml_count() -> int:
    """GPUs as NVML counts them (CUDA_VISIBLE_DEVICES applied), or -1 where NVML cannot."""
    if not torch.backends.cuda.is_built():
        return 0
    count = getattr(torch.cuda, "_device_count_nvml", None)  # torch's own, used by device_count
    return count() if count is not None else -1


def _device(item: str, text: str) -> str:
    """One device of --devices, checked: cpu, or a CUDA GPU this machine has."""
    try:
        device = torch.device(item)
    except RuntimeError:
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise RenderError(
            f"--devices {text}: {item!r} is not a device; use all, cpu, cuda:N "
            "or a comma-separated list of them"
        )
    if device.type == "cpu":
        return "cpu"
    count = torch.cuda.device_count()  # as in parse_devices: CUDA stays uninitialised
    if (device.index or 0) >= count:
        raise RenderError(
            f"--devices {text}: this machine has {count} CUDA GPU(s)"
            + ("; use --devices cpu" if not count else "")
        )
    return f"cuda:{device.index or 0}"


def run_here(payloads, device, sweep_dir, backend, quiet, on_start, on_done) -> None:
    """Every chunk in this process, one after another (the executor for one device)."""
    for number, payload in enumerate(payloads):
        on_start(number)
        on_done(number, chunk_outcomes(payload, sweep_dir, device, backend, quiet))


def _process_worker(
    worker: int, device: str, tasks, events, sweep_dir: str, backend: str, parent: int, share: int
) -> None:
    """A worker process: chunks from `tasks` until None, each one's start and outcomes put on
    `events`. It dies with the sweep's process (`parent`)."""
    die_with_parent(parent)
    # The worker's share of the host's cores: spawning agents and colouring use torch's CPU
    # threads, which spin while they wait, so workers with a thread per core each slow each
    # other down (docs/benchmarks.md).
    machine.limit_cpu_threads(share)
    if device.startswith("cuda"):
        torch.cuda.set_device(device)  # where anything not placed explicitly goes (contexts, events)
    while (task := tasks.get()) is not None:
        number, payload = task
        events.put(("start", worker, number, None))
        events.put(("done", worker, number, chunk_outcomes(payload, sweep_dir, device, backend, True)))


def start_method(devices: list[str]) -> str:
    """How worker processes start: PHYSARUM_START_METHOD if set, else "fork" for GPU workers on
    Linux while this process has not initialised CUDA, else "spawn".

    A spawned worker starts Python and imports torch and this package again before its GPU can
    start; a forked one has them imported already, and starts its first batch as soon as a
    one-GPU sweep would (docs/benchmarks.md). CUDA cannot be forked once initialised,
    hence the check (sweeps count GPUs through NVML; where NVML does not answer, counting
    initialises CUDA). CPU workers are spawned: a process that has run torch's OpenMP threads (a
    test run, a notebook) can hang in a forked child.
    """
    chosen = os.environ.get("PHYSARUM_START_METHOD")
    if chosen:
        if chosen not in multiprocessing.get_all_start_methods():
            raise RenderError(
                f"PHYSARUM_START_METHOD={chosen!r}: use one of "
                f"{', '.join(multiprocessing.get_all_start_methods())}"
            )
        return chosen
    gpus_only = all(device.startswith("cuda") for device in devices)
    cuda_untouched = not torch.cuda.is_initialized() and _nvml_count() >= 0
    if sys.platform.startswith("linux") and gpus_only and cuda_untouched:
        return "fork"
    return "spawn"


class WorkerPool:
    """One worker process per device (forked or spawned: start_method), pulling chunks.

    A sweep starts its pool before its checks and planning, so that the workers' start overlaps
    them. Leaving the `with` block kills workers that are still running.
    """

    def __init__(self, devices: list[str], sweep_dir: str, backend: str):
        context = multiprocessing.get_context(start_method(devices))
        self.devices = devices
        self.tasks, self.events = context.Queue(), context.Queue()
        self.processes = [
            context.Process(
                target=_process_worker,
                daemon=True,
                name=f"physarum-sweep-{device}",
                args=(i, device, self.tasks, self.events, sweep_dir, backend, os.getpid(), len(devices)),
            )
            for i, device in enumerate(devices)
        ]
        self.ran = False
        for process in self.processes:
            process.start()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        # Workers that ran end on their own (run() queued their stop); any other is killed: an
        # error, or nothing to do (a finished sweep need not wait for its workers' start).
        for process in self.processes:
            process.join(timeout=10 if self.ran and exc[0] is None else 0)
            if process.is_alive():
                process.kill()
                process.join()

    def run(self, payloads, on_start, on_done) -> None:
        """Run every chunk; on_start/on_done as for the other executors."""
        self.ran = True
        for number, payload in enumerate(payloads):
            self.tasks.put((number, payload))
        for _ in self.processes:
            self.tasks.put(None)  # a worker exits when the chunks are gone
        in_flight: dict[int, int] = {}  # worker -> the chunk it is rendering
        pending = set(range(len(payloads)))

        def handle(event) -> None:
            kind, worker, number, outcomes = event
            if kind == "start":
                in_flight[worker] = number
                on_start(number)
            elif number in pending:
                in_flight.pop(worker, None)
                pending.discard(number)
                on_done(number, outcomes)

        while pending:
            try:
                handle(self.events.get(timeout=0.5))
                continue
            except queue.Empty:
                pass
            dead = [w for w, process in enumerate(self.processes) if not process.is_alive()]
            if not dead:
                continue
            _drain(self.events, handle)  # what a worker said before it died counts
            for worker in dead:
                if worker in in_flight and in_flight[worker] in pending:
                    number = in_flight.pop(worker)
                    pending.discard(number)
                    message = f"the worker on {self.devices[worker]} died (exit code {self.processes[worker].exitcode})"
                    on_done(number, failed_outcomes(payloads[number], message, self.devices[worker]))
            if len(dead) == len(self.processes):
                for number in sorted(pending):
                    on_done(number, failed_outcomes(payloads[number], "no worker was left to run it", "?"))
                pending.clear()


def _drain(events, handle) -> None:
    """Handle every event still queued."""
    time.sleep(0.2)  # the last messages of a dead worker may still be in the pipe
    while True:
        try:
            handle(events.get_nowait())
        except queue.Empty:
            return
