"""A live performance as a preset: the preset the live loop runs, every change with the step it
took effect at, and the ordinary preset YAML whose `hold` schedules reproduce it.

The live loop steps exactly as a render of the recorded preset does: it runs the preset that
`Performance.preset` holds, a KeyframedSimulation following its schedules, which grow with each
change (render/live/session.py). So the recorded preset (`Performance.recorded`) renders the
frames the page was shown, byte for byte, on the same canvas. What makes that hold:

- a change of a model key (top level or a species') at step s is the keyframe `s: value` of a
  `hold` schedule of that key (the step from s to s + 1 uses it; the state of step s, the frame
  taken there, does not); keys before s keep their values, keys after s are dropped (the page
  controls the key from then on);
- a change of a look key (valued at each frame's step, render/look/hdr.py) is the keyframe
  s + 1: the frame taken at s was shown with the old value, the next one with the new;
- sensor_distance and step_size are one-keyframe schedules from step 0 (`{0: v}`): a scheduled
  distance is rounded to 1/65536 pixel (docs/presets.md, "Exact"), a plain one is not, so the
  steps before a first change must already step with the rounded value;
- the preset's own schedules keep their keyframes, percentages resolved to steps on its own run
  (the recorded run is another length, where a percentage would name another step);
- run.steps is the steps performed (LIVE_STEPS while live: no cap); the loop mode is none (a
  loop is made from the whole run), and checkpoints, raw fields and volumes are left out;
- a preset with a soundtrack (docs/audio.md) keeps its own run, the track's length, live and
  recorded, and its followed and periodic keys as written: they are resolved again from the
  track, frame by frame the same values, so frame i shown is frame i of the recorded render
  (the page's audio clock picks which frames are shown: the live loop's clock mode).

Keys that no schedule may hold (the palette, the look's curve, black point, bloom radius and
dithering, the seed, a look section added) change only by a restart: a new performance from step
0 whose preset starts with every live change's latest value.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import PresetError, RenderError
from ..base.inputs import excerpt
from ..preset.load import build_preset
from ..preset.schedule import MAX_KEYS, Resolved
from ..preset.schema import Preset
from .controls import DISTANCE_KEYS, LOOK_LIVE, MODEL_KEYS, by_key

LIVE_STEPS = 10_000_000  # run.steps while live: the schema's bound (Run.steps)
SOURCE = "live"  # how problems name the preset the page changes


@dataclass(frozen=True)
class Change:
    """One change of the performance: `key` took `value` from the step `step` on (the step the
    next frame's steps start from), shown from frame `frame` on."""

    step: int
    frame: int
    key: str
    value: float

    def data(self) -> dict:
        return {"step": self.step, "frame": self.frame, "key": self.key, "value": self.value}


def get_path(data: dict, key: str):
    """The value at a dotted key of preset data (species.1.model.decay: a list index); None where
    a section on the way is missing."""
    node = data
    for part in key.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
        if node is None:
            return None
    return node


def set_path(data: dict, key: str, value) -> None:
    """Set a dotted key of preset data in place, making missing sections (not list items)."""
    *sections, last = key.split(".")
    node = data
    for part in sections:
        if isinstance(node, list):
            node = node[int(part)]
            continue
        if node.get(part) is None:
            node[part] = {}
        node = node[part]
    node[last] = copy.deepcopy(value)


def step_keys(schedule: dict, resolved: tuple, where: str) -> dict:
    """A schedule's keys as the steps `resolved` names (the preset's own run: percentages, beats
    and bars resolved as it resolves them); PresetError where two keys land on one step (a step
    key cannot say which comes first)."""
    keys = {}
    for step, value in resolved:
        if step in keys and keys[step] != float(value):
            raise PresetError([f"{where}: two keys land on step {step}; live needs one keyframe a step"])
        keys[step] = float(value)
    return {**schedule, "keys": dict(sorted(keys.items()))}


def live_data(preset: Preset) -> dict:
    """The preset as the live loop runs it (the module's docstring): its data, with schedules
    keyed by steps, distances scheduled, no loop, no files but the outputs, and LIVE_STEPS."""
    if preset.dims != 2:
        raise RenderError(f"{preset.name}: physarum live shows 2D presets; render a 3D preset")
    data = preset.model_dump(mode="json")
    end = preset.end_step
    for path, value in preset.schedules:
        if not isinstance(value, Resolved):  # a followed key is resolved again from its track
            set_path(data, path, step_keys(get_path(data, path), value.resolved(end), path))
    models = ["model"] + [f"species.{s}.model" for s in range(len(data.get("species") or []))]
    for prefix in models:
        for key in DISTANCE_KEYS:
            value = get_path(data, f"{prefix}.{key}")
            if isinstance(value, int | float):
                set_path(data, f"{prefix}.{key}", {"ease": "hold", "keys": {0: value}})
    output = data.setdefault("output", {})
    for key in ("loop_mode", "loop_frames", "fields", "volume"):
        output.pop(key, None)
    data.pop("checkpoint", None)
    if not follows_a_track(preset):
        data["run"] = {**data.get("run", {}), "steps": LIVE_STEPS}
    return data


def follows_a_track(preset: Preset) -> bool:
    """Whether the preset's run is its soundtrack's (an audio section or a key resolved from
    one): the live run keeps the preset's length, since each frame's followed values are the
    track's at that frame, and a track-long run is what the page plays."""
    return preset.audio is not None or any(isinstance(v, Resolved) for _, v in preset.schedules)


def build(data: dict) -> Preset:
    """Preset data validated through the preset schema (PresetError with every problem)."""
    return build_preset(data, SOURCE, base=Path.cwd())


def said(problems: list[str], at: int) -> list[str]:
    """The schema's problems as the page says them: without the source's name, the keyframe the
    change made, or the whole schedule quoted back."""
    out = []
    for problem in problems:
        problem = problem.removeprefix(f"{SOURCE}: ").replace(f"keyframe {at}: ", "")
        out.append(re.sub(r" \(got \{'ease'.*\}\)$", "", problem))
    return out


def merged(current, at: int, value: float, key: str) -> dict:
    """A `hold` schedule that is `current` (a number or a schedule's data) before step `at` and
    `value` from it on; ValueError where `current` is a ramp (linear or smooth) of the preset's."""
    if isinstance(current, dict):
        if "keys" not in current:
            source = f"the soundtrack's {current['audio']}" if "audio" in current else "a periodic wave"
            raise ValueError(f"{key} follows {source}: change it in the preset")
        if current.get("ease", "linear") != "hold":
            raise ValueError(f"{key} follows the preset's own {current.get('ease', 'linear')} schedule")
        keys = {int(k): v for k, v in current["keys"].items() if int(k) < at}
    else:
        keys = {} if at == 0 else {0: current}
    if len(keys) >= MAX_KEYS:
        raise ValueError(f"{key} holds {MAX_KEYS} changes, the most a schedule holds: restart to go on")
    return {"ease": "hold", "keys": {**keys, at: value}}


def live_key(key: str) -> bool:
    """Whether a key is one the page changes at the next step (a schedule holds it)."""
    parts = key.split(".")
    if parts[0] == "model" and len(parts) == 2:
        return parts[1] in MODEL_KEYS
    if parts[0] == "species" and len(parts) == 4 and parts[2] == "model":
        return parts[1].isdigit() and parts[3] in MODEL_KEYS
    return parts[0] == "look" and len(parts) == 2 and parts[1] in LOOK_LIVE


@dataclass
class Performance:
    """One performance: the preset data it started from (`base`), its changes in order, and the
    preset the live loop runs now (`preset`: base with every change, run.steps LIVE_STEPS)."""

    base: dict
    changes: list[Change] = field(default_factory=list)
    preset: Preset = None

    def __post_init__(self):
        self.data = copy.deepcopy(self.base)
        self.preset = self.preset or build(self.data)
        controls = by_key(self.preset)
        self.allowed = {k for k, control in controls.items() if control.live and not control.fixed}
        self.fixed = {k: control.fixed for k, control in controls.items() if control.fixed}

    @classmethod
    def of(cls, preset: Preset) -> Performance:
        return cls(live_data(preset))

    def changed(self, key: str, value, step: int, frame: int) -> tuple[dict, Change]:
        """The preset data with `key` changed to `value` from `step` on (a look key from the next
        frame: step + 1), and the Change; PresetError naming the key and why."""
        if key not in self.allowed:
            why = "it is not a key the page controls live" if not live_key(key) else "it is fixed here"
            if key in self.fixed:
                why = f"it is fixed here: it {self.fixed[key]}"
            raise PresetError([f"{excerpt(key)}: not changed: {why} (a restart changes the other keys)"])
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise PresetError([f"{key}: a number is needed, not {excerpt(value)}"])
        value = float(value)
        at = step + 1 if key.startswith("look.") else step
        data = copy.deepcopy(self.data)
        current = get_path(data, key)
        if current is None and key.startswith("species."):  # not overridden: the top level's
            current = get_path(data, "model." + key.split(".")[-1])
        try:
            set_path(data, key, merged(current, at, value, key))
        except ValueError as error:
            raise PresetError([str(error)]) from None
        return data, Change(step, frame, key, value)

    def check(self, key: str, value, step: int, frame: int) -> None:
        """PresetError where the change would make an invalid preset (the schema's bounds and
        relations, with its messages)."""
        data, change = self.changed(key, value, step, frame)
        try:
            build(data)
        except PresetError as error:
            raise PresetError(said(error.problems, step + 1 if key.startswith("look.") else step)) from None

    def apply(
        self, changes: list[tuple[str, float]], step: int, frame: int
    ) -> tuple[list[Change], list[str]]:
        """Apply changes at `step` (frame: the first frame that shows them), each validated on
        its own: a bad one is left out. Returns (the changes made, the problems of the others)."""
        made, problems = [], []
        for key, value in changes:
            try:
                data, change = self.changed(key, value, step, frame)
                preset = build(data)
            except PresetError as error:
                problems.extend(said(error.problems, step + 1 if key.startswith("look.") else step))
                continue
            self.data, self.preset = data, preset
            # the key's later keyframes are dropped (merged): so are their changes
            self.changes = [c for c in self.changes if not (c.key == key and c.step >= change.step)] + [
                change
            ]
            made.append(change)
        return made, problems

    def recorded(self, frames: int, name: str | None = None) -> Preset:
        """The ordinary preset that renders this performance's first `frames` frames: run.steps
        the steps performed; named `name` (default: the preset's)."""
        data = copy.deepcopy(self.data)
        if not follows_a_track(self.preset):
            data["run"]["steps"] = max(1, frames) * self.preset.run.steps_per_frame
        if name is not None:
            data["name"] = name
        note = f"recorded live: {len(self.changes)} changes over {frames} frames"
        data["description"] = f"{data.get('description', '')}; {note}".strip("; ")[:1000]
        return build(data)

    def restarted(self, settings: dict) -> Performance:
        """A new performance from step 0: this one's preset with every live change at its latest
        value (as a plain number, a distance as its one-keyframe schedule) and `settings` (key:
        value: the restart keys, seed, a look section's keys, the palette) applied; PresetError
        where they make an invalid preset."""
        data = copy.deepcopy(self.data)
        for key in {c.key for c in self.changes}:
            latest = get_path(data, key)["keys"]
            value = latest[max(latest, key=int)]
            distance = key.split(".")[-1] in DISTANCE_KEYS
            set_path(data, key, {"ease": "hold", "keys": {0: value}} if distance else value)
        for key, value in settings.items():
            if key == "palette.names":
                value = [value]
            set_path(data, key, value)
        return Performance(data)
