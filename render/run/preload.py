"""A render's heavy libraries imported on a thread while the command reads and checks its preset
(issue 34: start-up overlapped), where PHYSARUM_PRELOAD=1 asks for it; off by default.

`physarum render` starts the thread first thing; the main thread reads, validates and checks
the preset meanwhile, and its own first `import torch` waits for the thread's (Python's import
lock: a module another thread is importing is waited for, never imported twice). The thread
imports only libraries outside the package (torch, numpy, av, and triton and CUDA's context
where the render will use a GPU), so it holds no lock of ours that the main thread could wait
for. A failure on the thread is dropped: the main thread's own import raises it again, as it
would without a preload. The thread is a daemon: a preset's mistake still exits at once.

Why off: on the 2-core CPU the imports hold the interpreter lock (GIL) nearly throughout, so
the thread and the main thread take turns rather than overlap. The process wall did not move
(alternated runs, medians: a 64x64 quickstart 2.63 s plain, 2.68 s preloaded, 8 each;
quickstart 6.68 s and 6.78 s, 4 each; the same bytes) and a bad preset's message came after
1.09 s instead of 0.39 s (its checks ran in turns with torch's import). Whether CUDA's context,
made by the thread on a GPU host, overlaps the preset's checks there is for the GPU run to
measure with this switch (benchmarks/unreleased/e2e.txt).
"""

from __future__ import annotations

import importlib
import os
import threading

SWITCH = "PHYSARUM_PRELOAD"


def wanted(environ=os.environ) -> bool:
    """Whether the environment asks for the preload (PHYSARUM_PRELOAD=1)."""
    return environ.get(SWITCH, "") == "1"


LIBRARIES = ("torch", "numpy", "av")  # what every render imports that takes long


def _load(backend: str | None, device: str | None) -> None:
    """Import LIBRARIES; where the render will take a CUDA GPU (--device cuda[:N], or none named
    and one is there), make CUDA's context and import triton for the backends that may use it."""
    try:
        for name in LIBRARIES:
            importlib.import_module(name)
        torch = importlib.import_module("torch")
        if (device is None or device.startswith("cuda")) and torch.cuda.is_available():
            torch.cuda.init()  # the context is the process's: the render's first CUDA call finds it
            if backend in (None, "auto", "triton"):
                importlib.import_module("triton")
    except Exception:  # the main thread's own import or first CUDA call says what went wrong
        pass


def start(backend: str | None, device: str | None, environ=os.environ) -> threading.Thread | None:
    """Start the preload of a render's libraries on a daemon thread where the environment asks for
    it (wanted); the thread, or None."""
    if not wanted(environ):
        return None
    thread = threading.Thread(target=_load, args=(backend, device), name="preload", daemon=True)
    thread.start()
    return thread
