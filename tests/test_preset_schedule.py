"""Schedules: keyframes and easings evaluated exactly, what they name, and every bad keyframe."""

from __future__ import annotations

from fractions import Fraction

import pytest

from physarum.kernels.exact import degrees_to_heading
from physarum.render.preset import build_preset, key_problem
from physarum.render.preset.schedule import Schedule, key_step, next_change, value_at
from support import problems_of, tiny, tiny_data, world_data


def schedule(keys, ease="linear") -> Schedule:
    return Schedule.model_validate({"keys": keys, "ease": ease})


def test_each_easing_between_two_keys():
    values = {
        ease: [value_at(schedule({10: 1.0, 20: 3.0}, ease), s, 100) for s in (10, 15, 19, 20)]
        for ease in ("hold", "linear", "smooth")
    }
    assert values["hold"] == [1, 1, 1, 3]
    assert values["linear"] == [1, 2, Fraction(14, 5), 3]
    # smoothstep: t^2 (3 - 2t), half way at t = 1/2, slow at both ends
    assert values["smooth"][:2] == [1, 2]
    assert values["smooth"][2] == 1 + 2 * Fraction(81, 100) * (3 - 2 * Fraction(9, 10))


def test_before_the_first_key_and_after_the_last_the_end_values_hold():
    ramp = schedule({10: 1.0, 20: 3.0})
    assert [value_at(ramp, s, 100) for s in (0, 9, 21, 100)] == [1, 1, 3, 3]


def test_percentages_name_steps_of_warmup_plus_steps_rounded_half_to_even():
    assert key_step("50%", 30) == 15
    assert key_step("25%", 30) == 8  # 7.5 rounds to the even 8
    assert key_step("12.5%", 20) == 2  # 2.5 rounds to the even 2
    assert key_step("100%", 1234) == 1234
    assert key_step("600", 1234) == 600  # a step's digits as JSON and embedded YAML spell it


def test_next_change_is_every_step_of_a_ramp_and_the_next_key_of_a_hold():
    ramp, hold = schedule({10: 1.0, 20: 3.0}), schedule({10: 1.0, 20: 3.0}, "hold")
    assert [next_change(ramp, s, 100) for s in (0, 10, 15, 19, 20)] == [10, 11, 16, 20, None]
    assert [next_change(hold, s, 100) for s in (0, 10, 19, 20)] == [10, 20, 20, None]
    flat = schedule({10: 2.0, 20: 2.0})
    assert next_change(flat, 12, 100) == 20  # equal keys: nothing changes in between


def test_model_params_follow_the_schedule_and_round_once():
    preset = tiny(sensor_angle={"keys": {0: 10.0, 24: 40.0}}, sensor_distance={"keys": {0: 2.0, 24: 5.0}})
    first, middle = preset.model_params(0, 0), preset.model_params(0, 7)
    assert (first.sensor_angle, first.sensor_distance) == (10.0, 2.0)
    assert middle.sensor_angle == float(Fraction(10) + Fraction(30 * 7, 24))
    # a scheduled distance is a whole number of 1/65536 pixels
    assert middle.sensor_distance == round((2 + Fraction(21, 24)) * 65536) / 65536
    assert preset.model_params(0, 24).sensor_angle == 40.0


def test_one_key_is_the_constant():
    scheduled = tiny(
        sensor_angle={"keys": {0: 33.0}}, decay={"keys": {"50%": 0.2}}, sensor_distance={"keys": {0: 5.0}}
    )
    plain = tiny(sensor_angle=33.0, decay=0.2, sensor_distance=5.0)
    assert all(scheduled.model_params(0, s) == plain.model_params(0) for s in (0, 5, 24))


def test_angles_become_whole_heading_steps_exactly():
    preset = tiny(turn_angle={"keys": {0: 0.0, 24: 90.0}})
    steps = [degrees_to_heading(preset.model_params(0, s).turn_angle) for s in range(25)]
    assert steps == [round(Fraction(90 * s, 24) * 4096 / 360) for s in range(25)]


def test_the_embedded_preset_gives_the_same_schedule_back():
    preset = tiny(decay={"ease": "smooth", "keys": {0: 0.1, "50%": 0.3, 24: 0.05}})
    again = build_preset(preset.portable_dump(), "again.yaml")
    assert again.model.decay == preset.model.decay
    assert [again.model_params(0, s) for s in range(25)] == [preset.model_params(0, s) for s in range(25)]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (
            {"sensor_angle": {"keys": {0: 10, 12: 200}}},
            "model.sensor_angle: keyframe 12: Input should be less than or equal to 180, not 200",
        ),
        ({"decay": {"keys": {0: 0.1, "half": 0.2}}}, "model.decay.keys: key 'half': a keyframe is a step"),
        ({"decay": {"keys": {}}}, "model.decay.keys: Dictionary should have at least 1 item"),
        (
            {"decay": {"keys": {0: 0.1}, "ease": "cubic"}},
            "model.decay.ease: Input should be 'hold', 'linear' or 'smooth'",
        ),
        ({"decay": {"keys": {0: 0.1, "120%": 0.2}}}, "model.decay.keys: key '120%'"),
        ({"decay": {"keys": {"50%": 0.1, "50.0%": 0.2}}}, "keys '50%' and '50.0%' name the same keyframe"),
        ({"decay": {"key": {0: 0.1}}}, "model.decay.key: unknown key"),
        ({"decay": 2.0}, "model.decay: Input should be less than 1"),
        (
            {"sensor_distance": {"keys": {0: 2, 10: 20}}},
            "model.sensor_distance: must be less than half the canvas's short side",
        ),
    ],
)
def test_a_bad_keyframe_is_named(model, expected):
    problems = problems_of(tiny_data(model={**tiny_data()["model"], **model}))
    assert any(expected in p for p in problems), problems


def test_settings_reach_into_a_schedule():
    data = tiny_data(model={**tiny_data()["model"], "decay": {"keys": {0: 0.1, 12: 0.2}}})
    preset = build_preset(
        data, "p.yaml", ["model.decay.keys.12=0.3", "model.decay.keys.25%=0.25", "model.decay.ease=hold"]
    )
    assert preset.model.decay.keys == {0: 0.1, 12: 0.3, "25%": 0.25}
    assert preset.model.decay.ease == "hold"
    assert key_problem("model.decay.keys.12") is None
    assert "keyframe is a step" in key_problem("model.decay.keys.soon")
    assert "only ease and keys" in key_problem("model.decay.speed")


def test_keys_a_short_run_rounds_onto_one_step_count_in_order_and_later_keys_wait():
    ramp = schedule({0: 10.0, "10%": 20.0, "20%": 30.0, "100%": 40.0, 5000: 99.0})
    # on a run of 2 steps 0, 10% and 20% are all step 0 (0.2 and 0.4 round to 0): the last counts
    assert value_at(ramp, 0, 2) == 30 and value_at(ramp, 1, 2) == 35 and value_at(ramp, 2, 2) == 40
    assert next_change(ramp, 0, 2) == 1 and next_change(ramp, 2, 2) == 3  # on towards step 5000
    tie = schedule({"50%": 1.0, 5: 2.0})  # both step 5 of a 10-step run: the step key first
    assert value_at(tie, 5, 10) == 1 and value_at(tie, 4, 10) == 2
    preset = build_preset(
        tiny_data(
            model={**tiny_data()["model"], "decay": {"ease": "hold", "keys": {0: 0.1, "20%": 0.2, 500: 0.3}}}
        ),
        "p.yaml",
        ["run.steps=2"],
    )
    assert preset.model_params(0, 1).decay == 0.2  # the key at 500 lies beyond a 2-step run


def test_a_scheduled_interaction_weight_is_checked_at_each_keyframe(images):
    data = world_data(interaction=[[1.0, {"keys": {0: -0.5, 12: -5000.0}}], [-0.5, 1.0]])
    problems = problems_of(data, source=str(images / "p.yaml"))
    assert any("interaction.0.1: must be from -1000 to 1000 (got -5000.0)" in p for p in problems), problems
