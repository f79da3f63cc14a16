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
    from .api import Simulation

# name -> (module, class) imported on first use, or the class itself
BACKENDS: dict[str, tuple[str, str] | type] = {
    "torch": ("physarum.kernels.reference", "TorchSimulation"),
    "triton": ("physarum.kernels.triton_backend", "TritonSimulation"),
}
# The 3D model's backends (docs/model.md section 13), by the same names: a preset's dimensions
# choose between a name's 2D and 3D class (get_backend(name, dims)).
BACKENDS_3D: dict[str, tuple[str, str] | type] = {
    "torch": ("physarum.kernels.reference3d", "TorchSimulation3D"),
    "triton": ("physarum.kernels.triton3d", "TritonSimulation3D"),
}


# what to install where a backend's module cannot be imported
INSTALL_HINTS = {"triton": "Triton is not installed (pip install 'physarum[triton]')"}
# --backend auto: the first of these, by device type, that can run on the device (Triton's CPU
# interpreter is for tests, never chosen by itself)
AUTO_ORDER = {"cuda": ("triton", "torch"), "cpu": ("torch",)}


def register_backend(name: str, backend: tuple[str, str] | type) -> None:
    """Register a Simulation class as `name`: the class, or (module, class name) to import it
    only when it is asked for."""
    BACKENDS[name] = backend


def get_backend(name: str, dims: int = 2) -> type[Simulation]:
    """The simulation class registered as `name` ('torch', 'triton' or a registered one), of
    `dims` spatial dimensions (3: the voxel model's class of that name)."""
    registry = BACKENDS_3D if dims == 3 else BACKENDS
    if name not in registry:
        raise ValueError(f"unknown {dims}D backend {name!r}; choose one of: {', '.join(registry)}")
    backend = registry[name]
    if isinstance(backend, type):
        return backend
    module, attribute = backend
    return getattr(importlib.import_module(module), attribute)


def backend_problem(name: str, device, dims: int = 2) -> str | None:
    """Why backend `name` cannot run on `device` (not installed, or the class's unusable_on),
    or None where it can."""
    try:
        backend = get_backend(name, dims)
    except ImportError as error:
        return INSTALL_HINTS.get(name, f"cannot be imported: {error}")
    return backend.unusable_on(device)
