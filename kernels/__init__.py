"""The Physarum simulation step: the contract (api), the PyTorch reference, the Triton kernels.

Backends are chosen by name from an explicit registry and imported only when asked for, so the
reference works where Triton is not installed.
"""

from __future__ import annotations

import importlib

BACKENDS = {
    "torch": ("physarum.kernels.reference", "TorchSimulation"),
    "triton": ("physarum.kernels.triton_backend", "TritonSimulation"),
}


def get_backend(name: str):
    """The simulation class registered as `name` ('torch' or 'triton')."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}")
    module, attribute = BACKENDS[name]
    return getattr(importlib.import_module(module), attribute)
