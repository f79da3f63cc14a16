"""Heavy libraries named at a module's top and loaded at their first use, so that the commands
that need none of them (help, presets, sweeps, validate, sweep --dry-run) start at once.

`np = lazy.module("numpy")` stands where `import numpy as np` stood: the name is bound when the
module is imported, the library is imported the first time an attribute of it is read
(`np.zeros`), and from then on every attribute is read from the library's own namespace (copied
once), so a loaded library costs nothing more. This is for start-up only: a module that imports a
library lazily behaves as if it had imported it, except that a missing library is reported at its
first use. tests/test_cli_main.py checks which libraries the light commands load.
"""

from __future__ import annotations

import importlib
import types


class LazyModule(types.ModuleType):
    """A library's stand-in: its first attribute read imports the library (importlib: thread
    safe, once) and copies the library's namespace into this one."""

    def __getattr__(self, attribute: str):
        library = importlib.import_module(self.__name__)
        self.__dict__.update(library.__dict__)
        return getattr(library, attribute)


def module(name: str) -> types.ModuleType:
    """The library `name` (a dotted module name: "numpy", "PIL.Image"), imported at first use."""
    return LazyModule(name)
