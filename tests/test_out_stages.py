"""out/stages.py: the stage that bound a render, from its pipeline's clock and its encoders'
waits, in the sidecar's timings and `bound`."""

from __future__ import annotations

import json

import torch

from physarum.render.out.stages import StageClock, bound, stage_timings
from support import render_tiny


def test_the_largest_stage_bounds_the_render_and_an_encoder_is_named_as_one():
    assert bound({"frames_s": 9.0, "stage_simulation_s": 1.0, "stage_wait_gif_s": 2.5}) == "encoder gif"
    assert bound({"stage_colour_s": 3.0, "stage_simulation_s": 1.0}) == "colour"
    assert bound({"frames_s": 1.0}) is None


def test_on_the_cpu_the_simulation_is_the_frame_loop_less_colouring_and_encoder_waits():
    clock = StageClock(torch.device("cpu"))
    clock.colour_s = 0.5
    timings = {"frames_s": 4.0, "finish_s": 1.0}
    stages = stage_timings(clock, {"gif": (1.0, 0.75), "mp4": (0.5, 0.0)}, timings)
    assert stages == {
        "stage_colour_s": 0.5,
        "stage_simulation_s": 2.0,
        "stage_wait_gif_s": 1.75,
        "stage_wait_mp4_s": 0.5,
    }
    assert bound(stages) == "simulation"
    assert stage_timings(None, {}, timings) == {}


def test_a_render_says_in_its_sidecar_which_stage_bound_it(tmp_path):
    result = render_tiny(tmp_path, output={"formats": ["gif", "png"]})
    record = json.loads(result.outputs["json"].read_text())
    stages = {k for k in record["timings"] if k.startswith("stage_")}
    assert {"stage_simulation_s", "stage_colour_s", "stage_wait_gif_s", "stage_wait_png_s"} == stages
    assert record["bound"] == result.bound and result.bound in (
        "simulation",
        "colour",
        "encoder gif",
        "encoder png",
    )
    assert sum(record["timings"][k] for k in stages) <= record["timings"]["total_s"] + 0.01
