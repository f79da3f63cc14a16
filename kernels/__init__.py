"""The Physarum simulation step: the contract (api), its exact arithmetic (exact) and spawning
(spawn), the PyTorch reference, the Triton kernels.

Backends are chosen by name from an explicit registry and imported only when asked for, so the
reference works where Triton is not installed. A backend is a class that implements
api.Simulation; another one plugs in with register_backend, and the render side builds it as
``get_backend(name)(state, tables, world, device=device)`` and sizes it by its device_bytes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from physarum.kernels.api import Simulation

# name -> (module, class) imported on first use, or the class itself
BACKENDS: dict[str, tuple[str, str] | type] = {
    "torch": ("physarum.kernels.reference", "TorchSimulation"),
    "triton": ("physarum.kernels.triton_backend", "TritonSimulation"),
}


def register_backend(name: str, backend: tuple[str, str] | type) -> None:
    """Register a Simulation class as `name`: the class, or (module, class name) to import it
    only when it is asked for."""
    BACKENDS[name] = backend


def get_backend(name: str) -> type[Simulation]:
    """The simulation class registered as `name` ('torch', 'triton' or a registered one)."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}")
    backend = BACKENDS[name]
    if isinstance(backend, type):
        return backend
    module, attribute = backend
    return getattr(importlib.import_module(module), attribute)
