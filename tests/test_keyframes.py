"""Keyframed simulations: the values switch at exactly their steps, on every backend, through
checkpoints, with the backend retuned only where a value changes."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
import torch

from physarum.kernels.exact import build_tables
from physarum.render.preset import build_preset
from physarum.render.run import runner
from physarum.render.sim.keyframes import KeyframedSimulation
from physarum.render.sim.simulation import make_batch_simulation
from physarum.render.world.maps import food_amounts
from support import assert_same_state, render_cpu, tiny_data, world_data

RUN = {"steps": 16, "steps_per_frame": 4}


def keyed(model=None, run=RUN, **sections):
    data = tiny_data(run=run, **sections)
    data["model"] = {**data["model"], **(model or {})}
    return build_preset(data, "tiny.yaml")


def simulate(preset, steps, backend="torch", start=None):
    device = "cpu"
    simulation = make_batch_simulation([preset], backend, torch.device(device), start)
    simulation.advance(steps)
    return simulation


def test_a_hold_switches_at_its_key_as_a_new_run_from_that_state_would():
    scheduled = keyed(
        {
            "decay": {"ease": "hold", "keys": {0: 0.1, 6: 0.3}},
            "sensor_angle": {"ease": "hold", "keys": {0: 20.0, 6: 50.0}},
        }
    )
    whole = simulate(scheduled, 16)
    assert isinstance(whole, KeyframedSimulation) and whole.retunes == 1
    before = simulate(keyed({"decay": 0.1, "sensor_angle": 20.0}), 6).state
    after = simulate(keyed({"decay": 0.3, "sensor_angle": 50.0}), 10, start=before)
    assert_same_state(whole.state, after.state, "hold at step 6")
    # and a render of the constant values differs: the switch is real
    assert not torch.equal(
        whole.state.trail, simulate(keyed({"decay": 0.1, "sensor_angle": 20.0}), 16).state.trail
    )


def test_a_ramp_retunes_at_each_step_it_changes_and_not_after():
    preset = keyed({"sensor_distance": {"keys": {0: 2.0, 8: 6.0}}})
    simulation = simulate(preset, 16)
    assert simulation.retunes == 8  # steps 1..8 each bring a new distance; 9..15 none


def test_an_angle_retunes_only_where_its_heading_steps_change():
    # 0 to 0.5 degrees over 16 steps: 0 .. 5.7 heading steps (360 / 4096 degrees each)
    preset = keyed({"turn_angle": {"keys": {0: 0.0, 16: 0.5}}})
    simulation = simulate(preset, 16)
    steps = {round(Fraction(1, 2) * Fraction(s, 16) * 4096 / 360) for s in range(16)}
    assert simulation.retunes == len(steps) - 1 < 15


def test_presets_without_schedules_run_the_backend_itself():
    assert not isinstance(simulate(keyed(), 1), KeyframedSimulation)


def test_advancing_in_pieces_is_advancing_at_once():
    preset = keyed({"turn_angle": {"ease": "smooth", "keys": {0: 10.0, "50%": 80.0, "100%": 30.0}}})
    whole = simulate(preset, 16)
    pieces = make_batch_simulation([preset], "torch", torch.device("cpu"))
    for steps in (3, 1, 5, 7):
        pieces.advance(steps)
    assert_same_state(pieces.state, whole.state)


def test_a_checkpoint_resumes_the_schedule_where_it_stood():
    preset = keyed(
        {
            "sensor_angle": {"ease": "smooth", "keys": {0: 10.0, 16: 70.0}},
            "deposit": {"keys": {0: 1.0, 10: 9.0}},
        }
    )
    middle = simulate(preset, 7).state
    resumed = simulate(preset, 9, start=middle)
    assert_same_state(resumed.state, simulate(preset, 16).state, "resumed at step 7")


def test_scheduled_interaction_and_food_change_the_world(images, monkeypatch):
    from physarum.render.sim import keyframes

    rebuilt = []  # the steps at which the food maps were made again
    monkeypatch.setattr(
        keyframes, "food_amounts", lambda preset, step: rebuilt.append(step) or food_amounts(preset, step)
    )
    data = world_data(interaction=[[1.0, {"keys": {0: -0.5, 12: 0.5}}], [-0.5, 1.0]])
    data["world"] = {
        **data["world"],
        "food": {"points": [{"x": 0.5, "y": 0.5, "amount": {"ease": "hold", "keys": {0: 1.0, 6: 40.0}}}]},
    }
    preset = build_preset(data, str(images / "p.yaml"))
    scheduled = simulate(preset, 12)
    assert scheduled.retunes == 11  # the weight ramps over the steps from 1..11 (the food switches at 6)
    assert rebuilt == [6]  # the food maps only where an amount changes, not at every weight's step
    rebuilt.clear()
    fixed = dict(data, interaction=[[1.0, -0.5], [-0.5, 1.0]])
    fixed["world"] = {**data["world"], "food": {"points": [{"x": 0.5, "y": 0.5, "amount": 1.0}]}}
    assert not torch.equal(
        scheduled.state.trail, simulate(build_preset(fixed, str(images / "p.yaml")), 12).state.trail
    )
    resumed = simulate(preset, 5, start=simulate(preset, 7).state)
    assert_same_state(resumed.state, scheduled.state, "world schedules resumed at step 7")


@pytest.mark.interpreter
def test_triton_follows_schedules_byte_for_byte(images):
    data = world_data(
        interaction=[[1.0, {"keys": {0: -0.5, 8: 0.5}}], [-0.5, 1.0]], run={"steps": 8, "steps_per_frame": 4}
    )
    data["model"] = {
        **data["model"],
        "sensor_distance": {"ease": "smooth", "keys": {0: 2.0, 8: 4.5}},
        "decay": {"ease": "hold", "keys": {0: 0.1, 3: 0.2}},
    }
    data["world"] = {
        **data["world"],
        "food": {"points": [{"x": 0.5, "y": 0.5, "amount": {"keys": {0: 1.0, 8: 4.0}}}]},
    }
    data["species"] = [
        data["species"][0],
        {**data["species"][1], "model": {"sensor_angle": {"keys": {0: 40.0, 8: 10.0}}}},
    ]
    preset = build_preset(data, str(images / "p.yaml"))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    triton = make_batch_simulation([preset], "triton", device)
    triton.advance(8)
    assert_same_state(triton.state.to("cpu"), simulate(preset, 8).state, "triton against torch")


@pytest.mark.interpreter
def test_a_scheduled_render_is_the_same_file_on_each_backend(tmp_path):
    preset = build_preset(
        tiny_data(
            canvas={"width": 24, "height": 16},
            agents={"count": 120},
            run={"steps": 8, "steps_per_frame": 2},
            model={
                **tiny_data()["model"],
                "sensor_angle": {"ease": "smooth", "keys": {0: 15.0, 8: 60.0}},
                "step_size": {"keys": {0: 1.0, 8: 2.0}},
            },
            output={"formats": ["gif", "png"]},
        ),
        "tiny.yaml",
    )
    found = {}
    for backend in ("torch", "triton"):
        device = "cuda" if backend == "triton" and torch.cuda.is_available() else "cpu"
        result = runner.render(preset, backend=backend, device=device, out_dir=tmp_path / backend, quiet=True)
        found[backend] = [result.outputs[fmt].read_bytes() for fmt in ("gif", "png")]
    assert found["torch"] == found["triton"]


@pytest.mark.gpu  # CUDA graphs
def test_triton_keeps_its_graphs_across_retunes(monkeypatch):
    captured = []  # every CUDA graph capture, of either simulation
    capture = torch.cuda.graph

    def counted(graph, *args, **kwargs):
        captured.append(graph)
        return capture(graph, *args, **kwargs)

    monkeypatch.setattr(torch.cuda, "graph", counted)
    preset = keyed(
        {"decay": {"ease": "hold", "keys": {0: 0.1, 8: 0.2}}}, run={"steps": 600, "steps_per_frame": 4}
    )
    simulation, twin = (make_batch_simulation([preset], "triton", torch.device("cuda")) for _ in "ab")
    simulation.advance(400)
    assert captured and simulation.retunes == 1
    expected = simulate(preset, 400)
    assert_same_state(simulation.state.to("cpu"), expected.state)
    twin.advance(400)
    # New values by hand: copied into the buffers the graphs read, so the simulation captures no
    # more graphs from here than its twin, which is never retuned, and steps with the new values.
    new = replace(preset.model_params(0, 400), decay=0.3)
    simulation.retune(build_tables([new], device="cuda"))
    expected.retune(build_tables([new]))
    counts = []
    for each in (simulation, twin):
        before = len(captured)
        each.advance(200)
        counts.append(len(captured) - before)
    assert counts[0] == counts[1], f"captures after the retune, and by the twin: {counts}"
    expected.advance(200)
    assert_same_state(simulation.state.to("cpu"), expected.state)
    assert not torch.equal(simulation.trail, twin.trail)


def test_a_scheduled_render_renders_again_from_its_gif(tmp_path):
    from physarum.render.cli.main import main

    preset = keyed(
        {"sensor_angle": {"ease": "smooth", "keys": {0: 15.0, "100%": 60.0}}},
        output={"formats": ["gif", "png"]},
    )
    first = render_cpu(preset, tmp_path / "a")
    assert (
        main(
            [
                "render",
                "--from",
                str(first.outputs["gif"]),
                "--out",
                str(tmp_path / "b"),
                "--quiet",
                "--backend",
                "torch",
            ]
        )
        == 0
    )
    again = tmp_path / "b" / "tiny" / first.outputs["gif"].name
    assert again.read_bytes() == first.outputs["gif"].read_bytes()


def test_the_sidecar_gives_each_schedules_keyframes_at_their_steps(tmp_path):
    import json

    preset = keyed(
        {"sensor_angle": {"ease": "smooth", "keys": {0: 15.0, "50%": 60.0}}}, output={"formats": ["png"]}
    )
    record = json.loads(render_cpu(preset, tmp_path).outputs["json"].read_text())
    assert record["schedules"] == {
        "model.sensor_angle": {"ease": "smooth", "keyframes": [[0, 15.0], [8, 60.0]]}
    }
    plain = json.loads(
        render_cpu(keyed(output={"formats": ["png"]}), tmp_path / "plain").outputs["json"].read_text()
    )
    assert "schedules" not in plain
