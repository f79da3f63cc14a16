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
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from physarum.render.base.inputs import excerpt

MAX_KEYS = 1000
PERCENT = re.compile(r"(\d{1,3}(?:\.\d{1,6})?)%")
# The tags of a scheduled value's two forms: error paths drop them (model.decay.keys.0, not
# model.decay.schedule.keys.0)
TAGS = ("number", "schedule")


class Schedule(BaseModel):
    """Keyframes (step or 'P%' of the run -> value) and the easing between them."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    keys: dict[Any, float] = Field(min_length=1, max_length=MAX_KEYS)  # forms: _key_forms
    ease: Literal["hold", "linear", "smooth"] = "linear"

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
        return _resolve(tuple(self.keys.items()), end)


@lru_cache(maxsize=256)  # asked at every step of a ramp
def _resolve(items: tuple, end: int) -> tuple[tuple[int, Fraction], ...]:
    def place(item) -> tuple:
        form = key_fraction(item[0])
        at = Fraction(form, max(end, 1)) if isinstance(form, int) else form
        return key_step(item[0], end), at, not isinstance(form, int)

    return tuple((key_step(key, end), Fraction(value)) for key, value in sorted(items, key=place))


def key_fraction(key: int | str) -> Fraction | int:
    """A key as written: an int step, or a Fraction of the run for 'P%'; ValueError otherwise."""
    if isinstance(key, int) and not isinstance(key, bool):
        if key < 0:
            raise ValueError(f"key {key}: a step must be 0 or more")
        return key
    if isinstance(key, str) and key.isdigit() and len(key) <= 8:
        return int(key)  # a step, as JSON and the embedded YAML spell int keys
    match = PERCENT.fullmatch(key) if isinstance(key, str) else None
    if match is None or Fraction(match[1]) > 100:
        raise ValueError(
            f"key {excerpt(key)}: a keyframe is a step (0, 600, ...) or a percentage of the run "
            f"from 0% to 100% ('50%')"
        )
    return Fraction(match[1]) / 100


def key_step(key: int | str, end: int) -> int:
    """The step a key names on a run whose last step is `end` (percentages round half to even)."""
    value = key_fraction(key)
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
    """Every value a number or schedule takes at a keyframe: they bound all of its values."""
    return list(value.keys.values()) if isinstance(value, Schedule) else [value]


def is_scheduled(value: Any) -> bool:
    return isinstance(value, Schedule)


def schedules_in(node: Any, path: str = "") -> Iterator[tuple[str, Schedule]]:
    """(dotted key path, schedule) of every schedule in a section, list or value, depth first."""
    if isinstance(node, Schedule):
        yield path, node
    elif isinstance(node, BaseModel):
        for key in type(node).model_fields:
            yield from schedules_in(getattr(node, key), f"{path}.{key}" if path else key)
    elif isinstance(node, list | tuple):
        for index, item in enumerate(node):
            yield from schedules_in(item, f"{path}.{index}" if path else str(index))


def _form(value: Any) -> str:
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
        if isinstance(value, Schedule):
            for key, keyframe in value.keys.items():
                try:
                    adapter.validate_python(keyframe)
                except ValidationError as error:
                    message = error.errors()[0]["msg"]
                    raise ValueError(f"keyframe {excerpt(key)}: {message}, not {excerpt(keyframe)}") from None
        return value

    forms = Annotated[number, Tag(TAGS[0])] | Annotated[Schedule, Tag(TAGS[1])]
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
