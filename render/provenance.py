"""What every output carries so that it renders again: the resolved preset, and the versions
that made it.

Every GIF (comment), PNG (text chunk), MP4 (metadata) and JSON sidecar (preset_yaml) holds
`embedded_text(preset)`; `physarum render --from FILE` reads it back (encode.read_embedded).
"""

from __future__ import annotations

from physarum.render import __version__
from physarum.render.preset import Preset


def version() -> str:
    """The physarum version that outputs and sidecars name."""
    return __version__


def embedded_text(preset: Preset) -> str:
    """What every output carries: a YAML preset that `physarum render --from` reads back."""
    return f"# physarum {version()}\n{preset.to_yaml()}"
