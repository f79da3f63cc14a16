"""What `physarum render --resume CHECKPOINT` renders: the checkpoint's preset (read as --from reads a
file's: within the loader's limits, with the images it carries or those under --images DIR,
reload.carried_preset, docs/safety.md), --set and --seed over
it within what a branch may change, and the checkpoint's state checked against that preset.

A resume without --set continues the render that wrote the checkpoint: every frame after it and
the final state are byte for byte the uninterrupted render's (docs/checkpoints.md). A branch
(--set) may change what acts on the state from the checkpoint on (BRANCH_KEYS), never what the
state's shape or the world it lives in are made of (canvas, agents, world, species' agents).
"""

from __future__ import annotations

import re
from pathlib import Path

from physarum.render.base.errors import RenderError
from physarum.render.base.inputs import excerpt, shorten
from physarum.render.preset import Preset, PresetError
from physarum.render.preset.provenance import OUTPUT_VERSION, OUTPUT_VERSIONS, version
from physarum.render.run.reload import carried_preset
from physarum.render.sim.checkpoint import CheckpointError, Resume, read_checkpoint
from physarum.render.sim.course import frames_before

# The keys a branch may change: what acts on the state from the checkpoint on.
BRANCH_KEYS = re.compile(
    r"(name|description|seed|interaction|model|run|palette|output|checkpoint)(\..*)?"
    r"|species\.\d+\.(model|colour|palette)(\..*)?"
)


def load_for_resume(args) -> tuple[Preset, Resume]:
    """The preset and starting state of `render --resume CHECKPOINT` (args: the render
    command's flags: resume, settings, seed, scale)."""
    path = Path(args.resume)
    if getattr(args, "stats", False):
        raise RenderError(
            "render --resume does not take --stats (its rows count steps from the spawn); "
            "render the preset with --stats instead"
        )
    checkpoint = read_checkpoint(path)
    if checkpoint.output_version != OUTPUT_VERSION:
        release = OUTPUT_VERSIONS.get(checkpoint.output_version, (checkpoint.release,))[0]
        raise CheckpointError(
            f"{path}: a checkpoint of output version {checkpoint.output_version} (physarum "
            f"{checkpoint.release}); this physarum {version()} steps output version {OUTPUT_VERSION} "
            f"differently: resume it with physarum {release}"
        )
    settings = list(args.settings)
    if args.scale is not None:
        settings.append(f"output.gif_scale={args.scale!r}")
    named = {setting.partition("=")[0].strip() for setting in settings}
    changed = sorted(key for key in named if not key.startswith("checkpoint."))
    folder = getattr(args, "images", None)
    stored = carried_preset(checkpoint.text, str(path), [], {}, folder)
    preset = carried_preset(checkpoint.text, str(path), settings, {"seed": args.seed}, folder)
    problems = branch_problems(stored, preset, checkpoint.step)
    if problems:
        raise PresetError([f"{path}: {problem}" for problem in problems])
    state = checkpoint.state(preset)
    first = frames_before(preset.run, checkpoint.step)
    how = (
        "resumed"
        if stored.portable_dump() == preset.portable_dump()
        else f"branched (--set {', '.join(changed)})"
    )
    note = (
        f"{how} from {shorten(path.name)} at step {checkpoint.step}: frames {first + 1} to "
        f"{preset.frames} of {preset.frames} (the frames before it are in the earlier render's files)"
    )
    return preset, Resume(state, note)


def branch_problems(stored: Preset, branched: Preset, step: int) -> list[str]:
    """Why `branched` may not continue a checkpoint of `stored` at `step`: a key outside
    BRANCH_KEYS changed, or the run ends at or before the checkpoint."""
    before, after = flatten(stored.portable_dump()), flatten(branched.portable_dump())
    problems = [
        f"{key}: a branch keeps the checkpoint's canvas, agents and world (the state's shapes "
        f"and where it lives); it may change the model, seed, run, palette, output and checkpoint "
        f"keys (got {excerpt(before.get(key))} -> {excerpt(after.get(key))})"
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key) and not BRANCH_KEYS.fullmatch(key)
    ]
    if step >= branched.end_step:
        problems.append(
            f"the checkpoint is at step {step}, the run ends at step {branched.end_step} "
            "(warmup + steps): nothing is left to render; continue it with --set run.steps=MORE"
        )
    return problems


def flatten(node, where: str = "") -> dict[str, object]:
    """{dotted key: value} of every leaf of a dump (lists by index)."""
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return {where: node}
    out: dict[str, object] = {}
    for key, value in items:
        out.update(flatten(value, f"{where}.{key}" if where else str(key)))
    if not out and where:
        out[where] = node  # an empty section or list is a value of its own
    return out
