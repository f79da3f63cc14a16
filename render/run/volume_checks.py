"""What a 3D preset's render (and the commands beside render) refuse, before anything is
written: one message naming the feature, why, and what to do instead (docs/3d.md, "What 3D
presets do not do yet"). The preset's own 3D rules (worlds, species, layers, schedules,
spawns) are the loader's (render/preset/load.py); these are the render's and the commands'.
"""

from __future__ import annotations

from ..base.errors import RenderError
from ..preset import Preset

COMMANDS_2D = {
    "sweep": "physarum sweep batches 2D presets; render each 3D preset with physarum render",
    "sensitivity": "physarum sensitivity measures 2D trail maps",
    "graph": "physarum graph skeletonises 2D trail maps",
    "explore": "physarum explore scores 2D trail maps",
}


def refuse_3d_command(preset: Preset, command: str) -> None:
    """RenderError where a 2D-only command is given a 3D preset."""
    if preset.dims == 3:
        raise RenderError(
            f"{preset.name}: a 3D preset (canvas.depth {preset.canvas.depth}); {COMMANDS_2D[command]}"
        )


def render_problem(
    preset: Preset, stats: bool = False, metrics: bool = False, resume: bool = False
) -> str | None:
    """What a render of this preset cannot do by its dimensions, as one message, or None.
    (--metrics measures a volume too: render/out/metrics.py; `metrics` is kept for callers;
    checkpoints and --resume keep and read a volume's state: render/sim/checkpoint.py.)"""
    if preset.dims == 2:
        if preset.camera is not None:
            return (
                "camera: only a 3D preset (canvas.depth set) has a camera; remove camera or set canvas.depth"
            )
        if preset.output.volume is not None and (preset.output.volume.every or preset.output.volume.at):
            return (
                "output.volume: a 2D preset's volume is its space-time stack, written once at the end; "
                "remove output.volume.at and output.volume.every"
            )
        return None
    refused = [
        (
            preset.output.fields is not None,
            "output.fields: raw fields are 2D maps; a 3D preset writes its trail volume with output.volume",
        ),
        (
            preset.loop[0] == "closest",
            "output.loop_mode closest compares 2D frames; a 3D preset loops with crossfade, ping-pong or an "
            "orbit of whole turns",
        ),
        (stats, "--stats measures 2D trail maps; a 3D preset writes its trail volume with output.volume"),
    ]
    problems = [text for bad, text in refused if bad]
    return f"{preset.name}: {problems[0]}" if problems else None


def check_render(presets: list[Preset], stats: bool, metrics: bool, resume: bool) -> None:
    """RenderError on the first preset of a batch whose render is refused (render_problem)."""
    for preset in presets:
        problem = render_problem(preset, stats, metrics, resume)
        if problem is not None:
            raise RenderError(problem)
