"""What `physarum render --resume CHECKPOINT` renders: the checkpoint's preset (read as --from reads a
file's: within the loader's limits, with the images it carries or those under --images DIR,
reload.carried_preset, docs/safety.md), --set and --seed over
it within what a branch may change, and the checkpoint's state checked against that preset.

A resume without --set continues the render that wrote the checkpoint: every frame after it and
the final state are byte for byte the uninterrupted render's (docs/checkpoints.md). A branch
(--set) may change what acts on the state from the checkpoint on (BRANCH_KEYS), never what the
state's shape or the world it lives in are made of (canvas, agents, world, species' agents).

The checkpoint's preset decides what is rendered, never how the render keeps state or writes
extras: a `checkpoint:` or `output.fields:` section in it is dropped (reload.carried_preset, with
a note), and only the user's own flags (--checkpoint-every, --checkpoint-at, --fields-at, --set)
set them. Everything that needs
only the preset is checked before the checkpoint's state is read (its members' declared sizes
here, the render's own checks in the runner, then Resume.load_state).

The files of a resumed render hold the whole animation: the frames before the checkpoint come
from the frame journal it records (render/out/journal.py, resume_journal), then the render goes
on. A branch re-feeds them when it keeps what frames look like (REFEED_KEYS: the frames before
the checkpoint are then the journal's, the branch's from it on); one that changes the look
holds only the frames after the checkpoint, and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...kernels import api
from ..base.errors import RenderError
from ..base.inputs import excerpt, shorten
from ..look.loops import shown_frames
from ..out.journal import JournalLacks, JournalSource, layout_of, open_journal, render_reads
from ..preset import Preset, PresetError
from ..preset.provenance import OUTPUT_VERSION, OUTPUT_VERSIONS, version
from ..sim.checkpoint import Checkpoint, CheckpointError, read_checkpoint
from ..sim.course import frames_before
from .reload import carried_preset

# The keys a branch may change: what acts on the state from the checkpoint on.
BRANCH_KEYS = re.compile(
    r"(name|description|seed|interaction|model|run|palette|look|camera|output|checkpoint)(\..*)?"
    r"|species\.\d+\.(model|colour|palette)(\..*)?"
)
# The keys a branch may change and still re-feed the checkpoint's journal: what acts on the
# state from the checkpoint on and how the files are encoded, never what a frame looks like.
REFEED_KEYS = re.compile(
    r"(name|description|seed|interaction|model)(\..*)?|species\.\d+\.model(\..*)?"
    r"|run\.steps|output\.(formats(\..*)?|fps|loop|png_dpi|gif_max_bytes|mp4)"
)


@dataclass(frozen=True)
class Resume:
    """Where a resumed render starts (RenderOptions.resume): a checkpoint whose header and
    member sizes were checked against `preset`, the preset it renders; its state is read only
    by load_state(), after the render's checks that need only the preset. how: "resumed" or
    "branched (--set ...)"; refeed: whether the frames of the checkpoint's journal are this
    render's frames (a branch that keeps the look), so that its files hold the whole animation."""

    checkpoint: Checkpoint
    preset: Preset
    how: str
    refeed: bool = True
    notes: tuple[str, ...] = ()  # what its file's preset had that the render does not take

    @property
    def step(self) -> int:
        return self.checkpoint.step

    def load_state(self) -> api.State:
        return self.checkpoint.state(self.preset)


def load_for_resume(args) -> tuple[Preset, Resume]:
    """The preset and starting state of `render --resume CHECKPOINT` (args: the render
    command's flags: resume, settings, seed, scale)."""
    path = Path(args.resume)
    if getattr(args, "stats", False):
        raise RenderError(
            "render --resume does not take --stats (its rows count steps from the spawn); "
            "render the preset with --stats instead"
        )
    checkpoint = read_checkpoint(path)  # its header only: the state is read after every check
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
    flags = {"seed"} if args.seed is not None else set()  # --seed is a --set seed=
    changed = sorted({key for key in named if not key.startswith("checkpoint.")} | flags)
    folder = getattr(args, "images", None)
    notes: list[str] = []  # the file's own checkpoint: and output.fields: are dropped (reload.py)
    stored = carried_preset(checkpoint.text, str(path), [], {}, folder)
    preset = carried_preset(checkpoint.text, str(path), settings, {"seed": args.seed}, folder, notes)
    problems = branch_problems(stored, preset, checkpoint.step)
    if problems:
        raise PresetError([f"{path}: {problem}" for problem in problems])
    checkpoint.check_sizes(preset)
    before, after = flatten(stored.portable_dump()), flatten(preset.portable_dump())
    differ = [key for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]
    how = "resumed" if not differ else f"branched (--set {', '.join(changed)})"
    refeed = all(REFEED_KEYS.fullmatch(key) for key in differ)
    return preset, Resume(checkpoint, preset, how, refeed, tuple(notes))


def resume_journal(
    resume: Resume | None, preset: Preset, frames_dir: bool
) -> tuple[JournalSource | None, str]:
    """The checkpoint's journal prefix to re-feed (checked whole, JournalError when it is not
    sound) and the note that says what the files hold; (None, "") for a render not resumed."""
    if resume is None:
        return None, ""
    checkpoint, total = resume.checkpoint, shown_frames(preset)
    first = journal_count(checkpoint, preset)
    start = f"{resume.how} from {shorten(checkpoint.path.name)} at step {checkpoint.step}"
    reads = render_reads(preset, frames_dir)
    layout = layout_of(preset, reads)
    if first == 0 or not layout.kinds:
        return None, f"{start}: frames 1 to {total} of {total}"
    why = None
    if not resume.refeed:
        why = "the branch changes what frames look like, so the checkpoint's journal is not its frames"
    elif checkpoint.journal is None:
        why = "the checkpoint records no frame journal (written by a render without one)"
    else:
        try:
            source = open_journal(checkpoint.path.parent, checkpoint.journal, layout, layout.kinds, first)
        except JournalLacks as error:
            why = str(error)
    if why is not None:
        return None, (
            f"{start}: its files hold frames {first + 1} to {total} of {total} only ({why}; the frames "
            "before it are in the earlier render's files, if it finished)"
        )
    made = source.mark.frames
    whose = "the branch's" if resume.how != "resumed" else "rendered on"
    return source, (
        f"{start}: frames 1 to {made} of {total} from its frame journal {shorten(source.path.name)}, "
        f"frames {made + 1} to {total} {whose}: the files hold the whole animation"
    )


def journal_count(checkpoint: Checkpoint, preset: Preset) -> int:
    """The frames the checkpoint's journal holds: those taken before it (or one less, at a
    frame's step), or a loop's frames shown by then (look/loops.py TrailLoop.shown_before)."""
    mode, count = preset.loop
    taken = checkpoint.loop_taken
    if mode == "none" or taken is None:
        return frames_before(preset.run, checkpoint.step)
    if mode == "crossfade":
        return max(0, min(taken - count, preset.frames - count))
    if mode == "closest":
        start, end = checkpoint.loop_window[:2]
        return max(0, min(taken - start, end - start))
    return taken


# The keys a looping render's branch keeps: its loop is made of the frames of its whole run.
LOOP_KEYS = re.compile(r"run\.(steps|steps_per_frame|warmup)|output\.loop_(mode|frames)")


def branch_problems(stored: Preset, branched: Preset, step: int) -> list[str]:
    """Why `branched` may not continue a checkpoint of `stored` at `step`: a key outside
    BRANCH_KEYS changed, or the run ends at or before the checkpoint."""
    before, after = flatten(stored.portable_dump()), flatten(branched.portable_dump())
    problems = [
        f"{key}: a branch keeps the checkpoint's canvas, agents and world (the state's shapes "
        f"and where it lives); it may change the model, seed, run, palette, look, camera, output and checkpoint "
        f"keys (got {excerpt(before.get(key))} -> {excerpt(after.get(key))})"
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key) and not BRANCH_KEYS.fullmatch(key)
    ]
    if stored.loop[0] != "none" and branched.loop[0] == stored.loop[0]:
        problems += [
            f"{key}: a looping render's branch keeps its run and loop (its loop is made of the whole "
            f"run's frames); got {excerpt(before.get(key))} -> {excerpt(after.get(key))}: resume with "
            "--set output.loop_mode=none to change it"
            for key in sorted(set(before) | set(after))
            if before.get(key) != after.get(key) and LOOP_KEYS.fullmatch(key)
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
