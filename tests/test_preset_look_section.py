"""render/preset/look_section.py: the look section's keys, bounds and where it applies."""

from __future__ import annotations

import pytest

from physarum.render.preset.look_section import CURVES, Look
from support import build_preset, problems_of, tiny_data


def test_defaults_are_a_plain_tone_curve_and_unset_keys_stay_out_of_dumps():
    look = Look()
    assert (look.curve, look.exposure, look.bloom, look.vignette, look.grain, look.dither) == (
        "aces",
        1.0,
        0.0,
        0.0,
        0.0,
        True,
    )
    assert "black" not in look.model_dump()
    assert set(CURVES) == {"linear", "log", "reinhard", "aces", "agx"}


def test_a_preset_without_a_look_dumps_as_before_and_one_with_it_round_trips():
    plain = build_preset(tiny_data(), "tiny.yaml")
    assert "look" not in plain.model_dump()
    looked = build_preset(tiny_data(look={"bloom": 1, "black": 0.3}), "tiny.yaml")
    again = build_preset(looked.model_dump(), "tiny.yaml")
    assert again.look == looked.look and again.look.black == 0.3 and again.look.bloom == 1.0


@pytest.mark.parametrize(
    "look, where",
    [
        ({"curve": "acse"}, "look.curve"),
        ({"bloom": 9}, "look.bloom"),
        ({"bloom_radius": 0}, "look.bloom_radius"),
        ({"grain": 0.5}, "look.grain"),
        ({"vignette": -0.1}, "look.vignette"),
        ({"black": 1.0}, "look.black"),
        ({"exposure": 0}, "look.exposure"),
        ({"glow": 1}, "look"),
    ],
)
def test_values_out_of_range_are_refused_naming_the_key(look, where):
    problems = problems_of(tiny_data(look=look))
    assert any(where in problem for problem in problems), problems


def test_a_look_on_species_or_a_heading_layer_is_refused():
    assert any("look: colours one map" in p for p in problems_of(tiny_data(look={}, species=[{}, {}])))
    heading = tiny_data(look={}, palette={"layer": "heading"})
    assert any("palette.layer is 'heading'" in p for p in problems_of(heading))
