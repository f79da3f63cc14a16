"""The sweep file's schema: pydantic models of its sections, closed and strict like the preset's,
and its problems worded the way presets word theirs.

    name: angles                      # optional; the file's stem otherwise
    description: sensor angle against turn angle
    base: ../presets/quickstart.yaml  # a preset file (relative to this file) or a mapping
    grid: {model.sensor_angle: [15, 45], model.turn_angle: [15, 45]}   # every combination
    zip: {model.decay: [0.05, 0.1], model.deposit: [3, 5]}              # walked together
    random: {count: 4, seed: 7, params: {model.diffuse: {uniform: [0.1, 1.0]}}}
    seeds: [1, 2]                     # every job once per seed

Problems are of two kinds, as a preset's are: a section's own (a bad value, an unknown key, a
swept key the preset schema lacks), which the models find, and those between sections (a key
swept twice, a name too long for the number of jobs), which relation_problems finds among the
sections that are valid. Both are reported at once, each naming the key path, the bad value and
what is allowed.
"""

from __future__ import annotations

import itertools
import math
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    WrapValidator,
    field_validator,
)
from pydantic_core import PydanticCustomError

from ..base.errors import did_you_mean
from ..base.inputs import excerpt, shorten
from ..preset import NAME_PATTERN, key_annotation, key_problem

MAX_JOBS = 100_000
DISTRIBUTIONS = ("uniform", "log_uniform", "choice")
NAME_RULE = "a-z, 0-9, '_' and '-', starting with a letter or digit"


def _problem(text: str, got: str | None = None) -> PydanticCustomError:
    """A validation error saying what is allowed; `got` replaces the bad value's repr in the report."""
    return PydanticCustomError("sweep", "{text}", {"text": text} | ({"got": got} if got else {}))


def _allowed(text: str) -> WrapValidator:
    """Every problem of a value reported as one that says what is allowed ('a non-empty list of
    values'), in place of pydantic's words for each part of it."""

    def check(value, handler):
        try:
            return handler(value)
        except ValidationError:
            raise _problem(text) from None

    return WrapValidator(check)


def _mapping(text: str, empty: bool = False) -> BeforeValidator:
    """A section that must be a mapping (a non-empty one unless `empty`); its entries are checked
    one by one, each with its own problems."""

    def check(value):
        if not isinstance(value, dict) or not (value or empty):
            raise _problem(text)
        return value

    return BeforeValidator(check)


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


def _swept(key: str) -> str:
    """A key a sweep may vary: any dotted preset key but name, which the sweep sets."""
    if key == "name":
        raise _problem("the sweep names its jobs (<sweep>-NNNN); name cannot be swept")
    reason = key_problem(key)
    if reason:
        raise _problem(reason)
    return key


def _ordered(bounds: list) -> list:
    if bounds[0] > bounds[1]:
        raise _problem("lo must not exceed hi")
    return bounds


def _equal_lengths(axes: dict[str, list]) -> dict[str, list]:
    if len({len(values) for values in axes.values()}) > 1:
        sizes = ", ".join(f"{key}: {len(values)}" for key, values in axes.items())
        raise _problem("the lists must have equal lengths to be walked together", got=sizes)
    return axes


def _distinct(seeds: list[int]) -> list[int]:
    if len(set(seeds)) != len(seeds):
        raise _problem("each seed once; a repeated seed renders the same job twice")
    return seeds


SweptKey = Annotated[str, _allowed("a dotted preset key, e.g. model.decay"), AfterValidator(_swept)]
Values = Annotated[list[Any], Field(min_length=1), _allowed("a non-empty list of values")]
Axes = Annotated[
    dict[SweptKey, Values],
    _mapping("a mapping of dotted keys to lists of values, e.g. {model.decay: [0.05, 0.1]}"),
]
# Numbers keep their type (an int stays an int); strict: a bool is no number, nor inf or nan.
Bounds = Annotated[
    list[int | float],
    Field(min_length=2, max_length=2),
    _allowed("[lo, hi], two finite numbers"),
    AfterValidator(_ordered),
]


class Uniform(Closed):
    """Numbers drawn evenly from lo to hi."""

    uniform: Bounds

    @property
    def bounds(self) -> list:
        return self.uniform


class LogUniform(Closed):
    """Numbers whose logarithm is drawn evenly: as many from 0.01 to 0.1 as from 0.1 to 1."""

    log_uniform: Bounds

    @property
    def bounds(self) -> list:
        return self.log_uniform

    @field_validator("log_uniform")
    @classmethod
    def _positive(cls, bounds: list) -> list:
        if bounds[0] <= 0:
            raise _problem("lo must be greater than 0")
        return bounds


class Choice(Closed):
    """One of the listed values, each as likely."""

    choice: Values


def _kind_of(value) -> str | None:
    """Which distribution a mapping is: its one key, where that names a distribution."""
    if isinstance(value, BaseModel):
        return next(iter(type(value).model_fields))
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in DISTRIBUTIONS:
        return next(iter(value))
    return None


def _one_problem(value, handler):
    """A distribution's problem reported at its key, with its kind ('log_uniform: lo must be
    greater than 0'), as the reported value is the whole distribution."""
    try:
        return handler(value)
    except ValidationError as error:
        first = error.errors()[0]
        raise _problem(f"{first['loc'][0]}: {first['msg']}" if first["loc"] else first["msg"]) from None


Distribution = Annotated[
    Annotated[Uniform, Tag("uniform")]
    | Annotated[LogUniform, Tag("log_uniform")]
    | Annotated[Choice, Tag("choice")],
    Discriminator(
        _kind_of,
        custom_error_type="sweep",
        custom_error_message="one of {uniform: [lo, hi]}, {log_uniform: [lo, hi]} or {choice: [values...]}",
    ),
    WrapValidator(_one_problem),
]
Params = Annotated[
    dict[SweptKey, Distribution],
    _mapping("a mapping of dotted keys to distributions, e.g. {model.decay: {log_uniform: [0.01, 0.3]}}"),
]
Count = Annotated[int, Field(ge=1, le=MAX_JOBS), _allowed(f"a whole number of samples, 1 .. {MAX_JOBS}")]


class Random(Closed):
    """`count` seeded draws of every parameter, each from its distribution."""

    # Required: None stands for a missing one, which is refused as a bad one is.
    count: Count = Field(None, validate_default=True)
    seed: Annotated[int, Field(ge=0), _allowed("a whole number >= 0")] = 0
    params: Params = Field(None, validate_default=True)


Name = Annotated[str, _allowed(f"a sweep's jobs are named <name>-NNNN: {NAME_RULE}")]
Base = Annotated[
    str | dict[str, Any],
    _allowed("a preset file (relative to the sweep file) or a preset mapping is required"),
]
Seeds = Annotated[
    list[Annotated[int, Field(ge=0, le=2**32 - 1)]],
    Field(min_length=1),
    _allowed("a non-empty list of whole numbers in 0 .. 2^32-1"),
    AfterValidator(_distinct),
]


class SweepFile(Closed):
    """A sweep file's sections; None where a section is not set. A name that is not set is the
    file's stem (an explicit null is refused); the base is required."""

    name: Name = None
    description: str = ""
    base: Base = Field(None, validate_default=True)
    grid: Axes | None = None
    zip: Annotated[Axes, AfterValidator(_equal_lengths)] | None = None
    random: Annotated[Random, _mapping("a mapping with count, seed and params", empty=True)] | None = None
    seeds: Seeds | None = None

    @property
    def swept_keys(self) -> list[str]:
        return [*(self.grid or {}), *(self.zip or {}), *(self.random.params if self.random else {})]

    @property
    def job_count(self) -> int:
        """Grid combinations x zip rows x random samples x seeds."""
        combinations = math.prod(len(values) for values in (self.grid or {}).values())
        rows = min((len(values) for values in (self.zip or {}).values()), default=1)
        samples = self.random.count if self.random else 1
        return combinations * rows * samples * len(self.seeds or [None])


_SECTIONS = {(): SweepFile, ("random",): Random}  # where an unknown key can be, and what is allowed there


def _describe(error: dict) -> str:
    """One pydantic error as 'key.path: what is allowed (got the bad value)'."""
    loc = error["loc"]
    path = ".".join(shorten(str(part)) for part in loc)
    if loc and loc[-1] == "[key]":  # a swept key: the path names it
        return f"{'.'.join(shorten(str(part)) for part in loc[:-1])}: {error['msg']}"
    if error["type"] == "extra_forbidden":
        keys = list(_SECTIONS[loc[:-1]].model_fields)
        return f"{path}: unknown key; {did_you_mean(shorten(str(loc[-1])), keys)}allowed: {', '.join(keys)}"
    got = (error.get("ctx") or {}).get("got") or excerpt(error.get("input"))
    return f"{path}: {error['msg']} (got {got})"


def read_sections(data: dict) -> tuple[SweepFile, list[str]]:
    """The sweep file's valid sections, and the problems of the others.

    A section with problems is left out (None), so that the valid ones can still be checked
    against each other: every problem is reported at once."""
    try:
        return SweepFile.model_validate(data), []
    except ValidationError as error:
        errors = error.errors()
    failed = {e["loc"][0] for e in errors if e["loc"]}
    # a key that is no text (None, 2.5: pydantic names it by another value) is a problem of its own
    valid = {key: value for key, value in data.items() if isinstance(key, str) and key not in failed}
    valid.setdefault("base", {})  # a stand-in: the relations between sections do not involve the base
    return SweepFile.model_validate(valid), [_describe(e) for e in errors]


def index_digits(jobs: int) -> int:
    """The digits of a job's number in its name: 4 (<sweep>-0000), more from 10,000 jobs on."""
    return max(4, len(str(max(jobs - 1, 0))))


def relation_problems(sections: SweepFile, name: str) -> list[str]:
    """Problems between sections, and between them and the preset schema: a key swept twice,
    seed swept while seeds is set, a whole-number key with no whole number in its range, a
    name too long for the number of jobs, too many jobs."""
    keys = sections.swept_keys
    problems = []
    for a, b in itertools.combinations(keys, 2):
        if a == b or b.startswith(a + ".") or a.startswith(b + "."):
            problems.append(f"{b}: swept twice (also as {a}); each key in one section only")
    if sections.seeds is not None and "seed" in keys:
        problems.append("seed: swept while seeds: is set; use one or the other")
    for key, distribution in (sections.random.params if sections.random else {}).items():
        if key_annotation(key) is int and not isinstance(distribution, Choice):
            lo, hi = distribution.bounds
            if math.ceil(lo) > math.floor(hi):
                problems.append(
                    f"random.params.{key}: {key} takes whole numbers and there is none in [{lo}, {hi}] "
                    f"(got {excerpt(distribution.model_dump())})"
                )
    total = sections.job_count
    digits = index_digits(total)
    # A job's name, <name>-<digits>, is a preset name: at most 64 characters (NAME_PATTERN).
    if not NAME_PATTERN.fullmatch(name) or len(name) > 63 - digits:
        problems.append(
            f"name: a sweep's jobs are named <name>-{'N' * digits}: 1 to {63 - digits} of {NAME_RULE} "
            f"(got {excerpt(name)})"
        )
    if total > MAX_JOBS:
        problems.append(f"the sweep expands to {total} jobs; at most {MAX_JOBS} are allowed")
    return problems
