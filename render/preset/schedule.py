"""Keyframed parameters: a number that changes over the run (docs/presets.md, "Schedules").

A model parameter (top level or a species'), an interaction weight or a food amount may be a
number or a schedule::

    sensor_angle: {ease: smooth, keys: {0: 22.5, 50%: 60, 100%: 22.5}}

Keys are steps (whole numbers, the state after that many steps, warmup included) or percentages
of the run's last step (warmup + steps, rounded half to even to a whole step). The value at step
s is the one the step from s to s + 1 uses: the first keyframe's before it, the last one's after
it, and between keyframes k0 <= s < k1, with t = (s - k0) / (k1 - k0):

- hold: the value of k0;
- linear: v0 + (v1 - v0) t;
- smooth: v0 + (v1 - v0) t^2 (3 - 2 t) (smoothstep: no jump in speed at either keyframe).

Everything is computed in exact fractions and rounded once, where the value is used (one float,
or one float32), so a schedule gives the same bits on every machine. Both easings stay between
their two keyframes' values, so a schedule's keyframes bound all of its values.

Two more forms are resolved into a value a frame before the render (docs/audio.md): a key that
follows an audio feature (Follow: `{audio: bass, range: [2, 9], attack: 10ms, release: 250ms}`)
and a periodic shape (Wave: `{wave: sine, period: 4 beats, range: [2, 9]}`). The preset's
validation (render/preset/audio.py) gives each its curve, hold keyframes (step, exact value), one a
frame; from then on they are schedules like any other, their range bounding their values.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterator
from fractions import Fraction
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from ..base.errors import did_you_mean
from ..base.inputs import excerpt
from .audio_features import FEATURES

MAX_KEYS = 1000
PERCENT = re.compile(r"(\d{1,3}(?:\.\d{1,6})?)%")
# The tags of a scheduled value's forms: error paths drop them (model.decay.keys.0, not
# model.decay.schedule.keys.0)
TAGS = ("number", "schedule", "follow", "wave", "track")  # track: run.steps: audio (sections.Steps)
MAX_MS = 60_000  # an attack or release: at most a minute
DURATION = re.compile(r"\s*(\d{1,6}(?:\.\d{1,6})?)\s*(ms|s)\s*")
MUSICAL = re.compile(r"\s*(\d{1,6}(?:\.\d{1,6})?)\s*(beats?|bars?)\s*")  # a key in musical time
PERIOD = re.compile(r"\s*(\d{1,6}(?:\.\d{1,6})?)\s*(beats?|bars?|steps?)\s*")
DECIMALS = 4  # a resolved value a frame is rounded to this many decimals


class Schedule(BaseModel):
    """Keyframes (step or 'P%' of the run -> value) and the easing between them."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    keys: dict[Any, float] = Field(min_length=1, max_length=MAX_KEYS)  # forms: _key_forms
    ease: Literal["hold", "linear", "smooth"] = "linear"
    _musical: tuple = PrivateAttr(default=())  # (key, step) of the keys in beats or bars

    @field_validator("keys")
    @classmethod
    def _key_forms(cls, keys: dict) -> dict:
        """Every key a step or a percentage; a step's digits ('600', as JSON and embedded YAML
        spell an int key) become the int, so a schedule reads back as it was written."""
        normal, forms = {}, {}
        for key, value in keys.items():
            form = key_fraction(key)  # ValueError naming the key
            kind = (isinstance(form, int), form)
            if kind in forms:
                raise ValueError(f"keys {excerpt(forms[kind])} and {excerpt(key)} name the same keyframe")
            forms[kind] = key
            normal[form if isinstance(form, int) else key] = value
        return normal

    def resolved(self, end: int) -> tuple[tuple[int, Fraction], ...]:
        """The keyframes as (step, exact value) on a run whose last step is `end`, in the order
        of what they name: by step; where keys land on one step (a short run rounds percentages
        together, or a step key meets a percentage), by their exact place in the run, a step key
        before a percentage at the same place. Keys after `end` are kept: the run never reaches
        them (a longer run of the same preset does)."""
        return _resolve(tuple(self.keys.items()), end, self._musical)

    @property
    def musical_keys(self) -> list[tuple[Any, Musical]]:
        """(key, Musical) of its keys in beats or bars."""
        found = ((key, key_fraction(key)) for key in self.keys)
        return [(key, form) for key, form in found if isinstance(form, Musical)]

    def set_musical(self, steps: dict) -> None:
        """The steps of its keys in beats or bars (render/preset/audio.py, from the tempo)."""
        self._musical = tuple(sorted(steps.items()))


def milliseconds(value: Any) -> Fraction:
    """An attack or release: a number of milliseconds, or text like '10ms' or '0.25s'; 0 to
    MAX_MS ms. ValueError naming what is allowed."""
    allowed = f"milliseconds from 0 to {MAX_MS}: a number, or text like '10ms' or '0.25s'"
    if isinstance(value, str):
        match = DURATION.fullmatch(value)
        if match is None:
            raise ValueError(f"must be {allowed} (got {excerpt(value)})")
        ms = Fraction(match[1]) * (1000 if match[2] == "s" else 1)
    elif isinstance(value, int | float) and not isinstance(value, bool) and value == value:
        ms = Fraction(value)
    else:
        raise ValueError(f"must be {allowed} (got {excerpt(value)})")
    if not 0 <= ms <= MAX_MS:
        raise ValueError(f"must be {allowed} (got {excerpt(value)})")
    return ms


class Resolved(BaseModel):
    """A value resolved per frame when the preset is validated (Follow, Wave): `range` (the
    values at 0 and at 1 of the feature or shape) and, once resolved, its curve: hold keyframes
    (step, exact value), read like a Schedule's (`ease` is hold)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    _curve: tuple = PrivateAttr(default=())
    _steps: list = PrivateAttr(default_factory=list)
    ease: ClassVar[str] = "hold"

    def set_curve(self, curve: list[tuple[int, Fraction]]) -> None:
        """Its hold keyframes (steps increasing), set once the preset's frames are known."""
        self._curve = tuple(curve)
        self._steps = [step for step, _ in curve]

    @property
    def is_resolved(self) -> bool:
        return bool(self._curve)

    @property
    def keys(self) -> dict:
        """Its range as keyframes (the live studio shows its last value)."""
        return {"0%": self.range[0], "100%": self.range[1]}

    def resolved(self, end: int) -> tuple[tuple[int, Fraction], ...]:
        """Its curve (unresolved: the range's first value throughout)."""
        return self._curve or ((0, Fraction(self.range[0])),)

    def at(self, step: int) -> Fraction:
        curve = self.resolved(0)
        return curve[max(0, bisect.bisect_right(self._steps, step) - 1)][1]

    def change_after(self, step: int) -> int | None:
        at = bisect.bisect_right(self._steps, step)
        return self._steps[at] if at < len(self._steps) else None

    def described(self) -> dict:
        """The sidecar's entry of the key (its `schedules`): what it follows as written, and its
        curve in brief instead of every keyframe (a 3-minute track has thousands): how many
        hold keyframes, the first and last step, and the sha256 of their text, a line
        "STEP VALUE\n" each (the value as Python's repr of its float: '2.9395'). The curve is
        resolved again from the preset and its track (or the feature table its outputs carry):
        `physarum.curves` gives it a frame, and the digest says it is the same."""
        curve = self.resolved(0)
        text = "".join(f"{step} {float(value)!r}\n" for step, value in curve)
        return {
            "ease": self.ease,
            "follows": self.model_dump(mode="json"),
            "keyframes_count": len(curve),
            "steps": [curve[0][0], curve[-1][0]],
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
        }

    def value(self, share: Fraction) -> Fraction:
        """The value at `share` (0 .. 1) of the range, rounded half to even to DECIMALS decimals
        and kept within the range (so within the key's bounds)."""
        low, high = Fraction(self.range[0]), Fraction(self.range[1])
        scale = 10**DECIMALS
        value = Fraction(round((low + (high - low) * share) * scale), scale)
        return min(max(value, min(low, high)), max(low, high))


class Follow(Resolved):
    """A key that follows an audio feature (render/preset/audio_features.py FEATURES): its range's
    first value at 0, its second at 1 (the track's 99th percentile), smoothed by a one-pole
    follower with attack and release times."""

    audio: str
    range: list[float] = Field(min_length=2, max_length=2)
    attack: int | float | str = 0
    release: int | float | str = 0

    @field_validator("audio")
    @classmethod
    def _feature(cls, name: str) -> str:
        if name not in FEATURES:
            raise ValueError(
                f"no audio feature {excerpt(name)}; {did_you_mean(name, FEATURES)}"
                f"the features: {', '.join(FEATURES)}"
            )
        return name

    @field_validator("attack", "release")
    @classmethod
    def _duration(cls, value):
        milliseconds(value)
        return value


class Wave(Resolved):
    """A periodic shape: sine, triangle, saw or square, over a period in beats, bars or steps
    ('4 beats', '2 bars', '120 steps', or a number of steps), from `phase` (a share of the
    period) on."""

    wave: Literal["sine", "triangle", "saw", "square"]
    period: int | str
    range: list[float] = Field(min_length=2, max_length=2)
    phase: float = Field(0.0, ge=0, lt=1)

    @field_validator("period")
    @classmethod
    def _period(cls, value):
        period_of(value)
        return value


def period_of(value: Any) -> tuple[Fraction, str]:
    """(length, unit) of a wave's period: unit 'beats', 'bars' or 'steps'; ValueError otherwise."""
    allowed = "a period like '4 beats', '2 bars' or '120 steps' (a number: steps), more than 0"
    if isinstance(value, int) and not isinstance(value, bool):
        length, unit = Fraction(value), "steps"
    else:
        match = PERIOD.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise ValueError(f"must be {allowed} (got {excerpt(value)})")
        length, unit = Fraction(match[1]), match[2].rstrip("s") + "s"
    if length <= 0:
        raise ValueError(f"must be {allowed} (got {excerpt(value)})")
    return length, unit


@lru_cache(maxsize=256)  # asked at every step of a ramp
def _resolve(items: tuple, end: int, musical: tuple = ()) -> tuple[tuple[int, Fraction], ...]:
    steps = dict(musical)

    def step_of(key) -> int:
        if isinstance(key_fraction(key), Musical):
            if key not in steps:
                raise ValueError(
                    f"key {excerpt(key)}: a key in beats or bars needs the audio section's tempo"
                )
            return steps[key]
        return key_step(key, end)

    def place(item) -> tuple:
        form = key_fraction(item[0])
        if isinstance(form, Musical):
            return step_of(item[0]), Fraction(step_of(item[0]), max(end, 1)), False
        at = Fraction(form, max(end, 1)) if isinstance(form, int) else form
        return step_of(item[0]), at, not isinstance(form, int)

    return tuple((step_of(key), Fraction(value)) for key, value in sorted(items, key=place))


class Musical(NamedTuple):
    """A keyframe in musical time: `length` beats or bars after the first beat (docs/audio.md)."""

    length: Fraction
    unit: str  # "beats" or "bars"


def key_fraction(key: int | str) -> Fraction | int | Musical:
    """A key as written: an int step, a Fraction of the run for 'P%', or a Musical time ('8 bars',
    '4 beats'); ValueError otherwise."""
    if isinstance(key, int) and not isinstance(key, bool):
        if key < 0:
            raise ValueError(f"key {key}: a step must be 0 or more")
        return key
    if isinstance(key, str) and key.isdigit() and len(key) <= 8:
        return int(key)  # a step, as JSON and the embedded YAML spell int keys
    musical = MUSICAL.fullmatch(key) if isinstance(key, str) else None
    if musical is not None:
        return Musical(Fraction(musical[1]), musical[2].rstrip("s") + "s")
    match = PERCENT.fullmatch(key) if isinstance(key, str) else None
    if match is None or Fraction(match[1]) > 100:
        raise ValueError(
            f"key {excerpt(key)}: a keyframe is a step (0, 600, ...), a percentage of the run "
            f"from 0% to 100% ('50%') or a time in beats or bars of the audio section's tempo ('8 bars')"
        )
    return Fraction(match[1]) / 100


def key_step(key: int | str, end: int) -> int:
    """The step a key names on a run whose last step is `end` (percentages round half to even);
    ValueError for a key in beats or bars, whose step the preset's tempo gives (Schedule.resolved)."""
    value = key_fraction(key)
    if isinstance(value, Musical):
        raise ValueError(f"key {excerpt(key)}: a key in beats or bars needs the audio section's tempo")
    return value if isinstance(value, int) else round(value * end)


def ease(kind: str, t: Fraction) -> Fraction:
    """The share of the way from one keyframe's value to the next at t in [0, 1)."""
    if kind == "hold":
        return Fraction(0)
    if kind == "linear":
        return t
    return t * t * (3 - 2 * t)


def value_at(value: float | Schedule, step: int, end: int) -> Fraction:
    """The exact value of a number or a schedule at `step` of a run whose last step is `end`."""
    if isinstance(value, Resolved):
        return value.at(step)
    if not isinstance(value, Schedule):
        return Fraction(value)
    keys = value.resolved(end)
    if step < keys[0][0]:
        return keys[0][1]
    for (k0, v0), (k1, v1) in zip(keys, keys[1:]):
        if k0 <= step < k1:  # keys on one step make no segment: the later one's value counts
            return v0 + (v1 - v0) * ease(value.ease, Fraction(step - k0, k1 - k0))
    return keys[-1][1]


def next_change(value: float | Schedule, step: int, end: int) -> int | None:
    """The first step after `step` whose value may differ from the value at `step`; None if none."""
    if isinstance(value, Resolved):
        return value.change_after(step)
    if not isinstance(value, Schedule):
        return None
    keys = value.resolved(end)
    if step < keys[0][0]:  # before the first key: its value holds until it
        return keys[0][0]
    for (k0, v0), (k1, v1) in zip(keys, keys[1:]):
        if k0 <= step < k1:
            ramps = value.ease != "hold" and v0 != v1
            return step + 1 if ramps else k1
    return None


def keyframe_values(value: float | Schedule) -> list[float]:
    """Every value a number or schedule takes at a keyframe: they bound all of its values (a
    followed or periodic value's range bounds its values)."""
    if isinstance(value, Resolved):
        return list(value.range)
    return list(value.keys.values()) if isinstance(value, Schedule) else [value]


def needs_its_preset(value: Any) -> bool:
    """Whether a value is resolved by its preset's validation (a followed or periodic value, a
    schedule with keys in beats or bars): a copy made from its dump would lose what it resolved."""
    return isinstance(value, Resolved) or (isinstance(value, Schedule) and bool(value.musical_keys))


def is_scheduled(value: Any) -> bool:
    return isinstance(value, Schedule | Resolved)


def schedules_in(node: Any, path: str = "") -> Iterator[tuple[str, Schedule | Resolved]]:
    """(dotted key path, schedule) of every schedule in a section, list or value, depth first
    (followed and periodic values too)."""
    if isinstance(node, Schedule | Resolved):
        yield path, node
    elif isinstance(node, BaseModel):
        for key in type(node).model_fields:
            yield from schedules_in(getattr(node, key), f"{path}.{key}" if path else key)
    elif isinstance(node, list | tuple):
        for index, item in enumerate(node):
            yield from schedules_in(item, f"{path}.{index}" if path else str(index))


def _form(value: Any) -> str:
    if isinstance(value, Follow) or (isinstance(value, dict) and "audio" in value):
        return "follow"
    if isinstance(value, Wave) or (isinstance(value, dict) and "wave" in value):
        return "wave"
    return "schedule" if isinstance(value, dict | Schedule) else "number"


def _optional_form(value: Any) -> str:
    return "none" if value is None else _form(value)


class Bounds(dict):
    """The bounds a scheduled() type was made with, kept in its metadata (all_optional remakes it)."""


def scheduled(optional: bool = False, **bounds) -> Any:
    """The type of a parameter that may be scheduled: a float within `bounds` (pydantic's ge,
    gt, le, lt) or a Schedule whose every keyframe value lies within them; with optional, also
    None (a species' override that is not set)."""
    number = Annotated[float, Field(**bounds)]
    adapter = TypeAdapter(number, config={"strict": True, "allow_inf_nan": False})

    def within(value):
        if isinstance(value, Resolved):
            for index, end in enumerate(value.range):
                try:
                    adapter.validate_python(end)
                except ValidationError as error:
                    message = error.errors()[0]["msg"]
                    raise ValueError(
                        f"range {index}: {message}, not {excerpt(end)} (a range lies within the key's bounds)"
                    ) from None
        if isinstance(value, Schedule):
            for key, keyframe in value.keys.items():
                try:
                    adapter.validate_python(keyframe)
                except ValidationError as error:
                    message = error.errors()[0]["msg"]
                    raise ValueError(f"keyframe {excerpt(key)}: {message}, not {excerpt(keyframe)}") from None
        return value

    forms = (
        Annotated[number, Tag(TAGS[0])]
        | Annotated[Schedule, Tag(TAGS[1])]
        | Annotated[Follow, Tag(TAGS[2])]
        | Annotated[Wave, Tag(TAGS[3])]
    )
    if optional:
        forms = forms | Annotated[None, Tag("none")]
    form = _optional_form if optional else _form
    return Annotated[forms, Discriminator(form), AfterValidator(within), Bounds(bounds)]


def optional_form(annotation: Any) -> Any:
    """A scheduled() type made optional (None allowed); None for any other annotation."""
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, Bounds):
            return scheduled(optional=True, **meta)
    return None
