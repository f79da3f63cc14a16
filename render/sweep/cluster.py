"""Where chunks run on a Ray cluster: one Ray task per chunk (an executor as in workers.py)."""

from __future__ import annotations

from physarum.render.base.errors import RenderError
from physarum.render.sweep.chunk import failed_outcomes, run_chunk


def ray_connect(address: str):
    """The ray module, connected: to a running cluster ('auto' or its address), to a new local
    instance ('local'), or as already initialised by the caller (tests do that)."""
    try:
        import ray
    except ImportError:
        raise RenderError("--ray needs Ray: pip install 'physarum[ray]'") from None
    if not ray.is_initialized():
        try:
            if address == "local":
                ray.init(include_dashboard=False)
            else:
                ray.init(address=address)
        except ConnectionError as error:
            raise RenderError(f"--ray {address}: cannot connect: {error}") from None
    return ray


def ray_workers(ray) -> int:
    """How many chunks a Ray cluster runs at once (its GPUs, or its CPUs where it has none)."""
    resources = ray.cluster_resources()
    return max(1, int(resources.get("GPU", 0) or resources.get("CPU", 1)))


def run_ray(ray, payloads, sweep_dir, backend, on_start, on_done) -> None:
    """Every chunk as a Ray task: one GPU each where the cluster has GPUs, else CPU-only."""
    gpus = ray.cluster_resources().get("GPU", 0)
    task = ray.remote(num_gpus=1 if gpus else 0, num_cpus=1)(run_chunk)
    device = "cuda" if gpus else "cpu"  # Ray sets CUDA_VISIBLE_DEVICES to the task's GPU
    references = {}
    for number, payload in enumerate(payloads):
        references[task.remote(payload, sweep_dir, device, backend, True)] = number
        on_start(number)
    while references:
        finished, _ = ray.wait(list(references), num_returns=1)
        number = references.pop(finished[0])
        try:
            outcomes = ray.get(finished[0])
        except Exception as error:  # the task raised, or its worker or node died
            outcomes = failed_outcomes(
                payloads[number], f"Ray task failed: {type(error).__name__}: {error}", device
            )
        on_done(number, outcomes)
