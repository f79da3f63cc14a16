"""Preset sections: defaults, bounds, strict types and finite numbers, palettes."""

from __future__ import annotations

import pytest

from physarum.render.preset import build_preset
from support import problems_of, tiny_data


def test_defaults_fill_missing_sections():
    preset = build_preset({"name": "bare"}, "bare.yaml")
    assert preset.model.sensor_angle == 22.5
    assert preset.output.formats == ["gif", "mp4", "png"]
    assert preset.frames == 100


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinite_numbers_are_refused(value):
    problems = problems_of(tiny_data(model={"decay": value}))
    assert problems == [f"p.yaml: model.decay: must be a finite number (got {value!r})"]


@pytest.mark.parametrize(
    "section,key,value",
    [
        ("canvas", "width", 7),
        ("canvas", "height", 20000),
        ("agents", "count", 0),
        ("model", "decay", 1.0),
        ("model", "diffuse", -0.1),
        ("run", "steps", 0),
        ("output", "fps", 0),
        ("palette", "gamma", 0),
    ],
)
def test_out_of_range_values(section, key, value):
    problems = problems_of(tiny_data(**{section: {key: value}}))
    assert len(problems) == 1 and f"{section}.{key}:" in problems[0] and f"(got {value})" in problems[0]


def test_wrong_types_are_not_coerced():
    problems = problems_of(tiny_data(seed="7", canvas={"width": 64.5}, output={"formats": "gif"}))
    assert {p.split(":")[1].strip() for p in problems} == {"seed", "canvas.width", "output.formats"}


def test_palette_names_and_hex_stops():
    assert build_preset(tiny_data(palette={"names": [["#000", "#ff8800", "fff"]]}), "p").palette.names
    problems = problems_of(tiny_data(palette={"names": ["magam", ["#zz0000", "#fff"]]}))
    assert "did you mean 'magma'?" in problems[0]


def test_each_output_format_once():
    problems = problems_of(tiny_data(output={"formats": ["gif", "gif", "mp4", "png", "png"]}))
    assert problems == [
        "p.yaml: output.formats: lists gif and png more than once; name each format once, "
        "e.g. ['gif', 'mp4', 'png'] (got ['gif', 'gif', 'mp4', 'png', 'png'])"
    ]


def test_mp4_setting_is_one_of_the_known():
    (problem,) = problems_of(tiny_data(output={"mp4": "sharp"}))
    assert problem == (
        "p.yaml: output.mp4: Input should be 'browser', 'browser-sharp', 'browser-fast', 'master', 'hevc' "
        "or 'av1' "
        "(got 'sharp')"
    )
    assert build_preset(tiny_data(output={"mp4": "master"}), "p").output.mp4 == "master"
    assert "mp4" not in build_preset(tiny_data(), "p").portable_dump()["output"]  # unset: dumps as before


@pytest.mark.parametrize("high", [0.5, 0.2])
def test_levels_high_must_be_above_low(high):
    problems = problems_of(tiny_data(palette={"levels": {"low": 0.5, "high": high}}))
    assert problems == [
        f"p.yaml: palette.levels: high must be greater than low, or auto (got high: {high!r}, low: 0.5) "
        f"(got {{'low': 0.5, 'high': {high!r}}})"
    ]
    assert (
        build_preset(tiny_data(palette={"levels": {"low": 0.5, "high": 0.6}}), "p").palette.levels.high == 0.6
    )


def test_a_long_bad_value_is_quoted_in_short():
    (problem,) = problems_of(tiny_data(model={"deposit": "x" * 100_000}))
    assert problem.startswith("p.yaml: model.deposit: Input should be a valid number (got 'xxx")
    assert problem.endswith("...)") and len(problem) < 200
    (problem,) = problems_of(tiny_data(palette={"names": ["y" * 100_000]}))
    assert len(problem) < 1000


def test_an_optional_image_given_as_null_is_no_image():
    """`agents.image: null` (or a species' image: null, --set agents.image=null) was handed to the
    path check as None and ended in a traceback (found by tests/test_fuzz.py)."""
    preset = build_preset(tiny_data(agents={"image": None}), "t.yaml")
    assert preset.agents.image is None
    species = [{"name": "a", "agents": {"image": None}}, {"name": "b"}]
    assert build_preset(tiny_data(species=species), "t.yaml").species[0].agents.image is None
    assert "image" in " ".join(problems_of(tiny_data(agents={"spawn": "image", "image": None})))
