"""The live record: changes become hold schedules at their steps, the saved YAML is an ordinary
preset, and the live loop's frames are those a render of the recorded preset gives, byte for byte."""

from __future__ import annotations

import hashlib

import pytest
import yaml

from physarum.render.base.errors import PresetError
from physarum.render.live.controls import by_key
from physarum.render.live.record import LIVE_STEPS, Performance
from physarum.render.live.session import LiveSession
from physarum.render.preset import build_preset, load_preset
from physarum.render.run.stream import FrameStream
from support import tiny_data

# a distance that is no multiple of 1/65536 pixel (a plain one steps unrounded, a scheduled one
# rounded), and a look whose exposure the page changes
LOOKED = tiny_data(
    model={**tiny_data()["model"], "sensor_distance": 5.3},
    look={"curve": "reinhard", "exposure": 1.5},
    output={"formats": ["gif"], "loop_mode": "crossfade", "loop_frames": "50%"},
)
SPECIES = tiny_data(species=[{"name": "a", "colour": "#ff4030"}, {"name": "b", "model": {"decay": 0.2}}])


def sha(rgb) -> str:
    return hashlib.sha256(rgb.tobytes()).hexdigest()


def performance(data: dict) -> Performance:
    return Performance.of(build_preset(data, "live.yaml"))


def test_changes_become_hold_schedules_at_their_steps():
    live = performance(LOOKED)
    assert live.preset.run.steps == LIVE_STEPS and live.preset.loop[0] == "none"
    assert live.data["model"]["sensor_distance"] == {"ease": "hold", "keys": {0: 5.3}}
    made, problems = live.apply([("model.decay", 0.3), ("look.exposure", 2.0)], 9, 3)
    assert problems == [] and [(c.key, c.step, c.frame) for c in made] == [
        ("model.decay", 9, 3),
        ("look.exposure", 9, 3),
    ]
    live.apply([("model.decay", 0.25)], 15, 5)
    assert live.data["model"]["decay"] == {"ease": "hold", "keys": {0: 0.1, 9: 0.3, 15: 0.25}}
    # a look value is valued at each frame's step: the frame taken at 9 was shown with the old one
    assert live.data["look"]["exposure"] == {"ease": "hold", "keys": {0: 1.5, 10: 2.0}}
    # a later change at an earlier key's step replaces what follows it
    live.apply([("model.decay", 0.5)], 9, 3)
    assert live.data["model"]["decay"] == {"ease": "hold", "keys": {0: 0.1, 9: 0.5}}


def test_a_species_change_starts_from_the_top_levels_values():
    live = performance(SPECIES)
    live.apply([("model.decay", 0.3)], 6, 2)
    live.apply([("species.0.model.decay", 0.05)], 12, 4)
    live.apply([("species.1.model.decay", 0.4)], 12, 4)
    species = live.data["species"]
    assert species[0]["model"]["decay"] == {"ease": "hold", "keys": {0: 0.1, 6: 0.3, 12: 0.05}}
    assert species[1]["model"]["decay"] == {"ease": "hold", "keys": {0: 0.2, 12: 0.4}}
    assert live.preset.species_model(0).decay.keys == {0: 0.1, 6: 0.3, 12: 0.05}


def test_the_saved_yaml_is_an_ordinary_preset_of_the_steps_performed(tmp_path):
    live = performance(LOOKED)
    live.apply([("model.turn_angle", 30.0)], 6, 2)
    recorded = live.recorded(7, "tiny-live-1")
    path = tmp_path / "tiny-live-1.yaml"
    path.write_text(recorded.to_yaml())
    again = load_preset(path)
    assert again == recorded
    assert (again.name, again.run.steps, again.frames) == ("tiny-live-1", 21, 7)
    assert yaml.safe_load(path.read_text())["model"]["turn_angle"]["keys"] == {"0": 45.0, "6": 30.0}
    assert "loop_mode" not in yaml.safe_load(path.read_text())["output"]


def test_refused_changes_say_why_and_change_nothing():
    live = performance(tiny_data(model={**tiny_data()["model"], "deposit": {"keys": {0: 5, 24: 9}}}))
    before = live.data
    with pytest.raises(PresetError, match="less than 1"):
        live.check("model.decay", 1.5, 3, 1)
    with pytest.raises(PresetError, match="not a key the page controls live"):
        live.check("canvas.width", 64, 3, 1)
    with pytest.raises(PresetError, match="not a key the page controls live"):
        live.check("world.walls.path", "/etc/passwd", 3, 1)
    with pytest.raises(PresetError, match="a number is needed"):
        live.check("model.decay", "0.2", 3, 1)
    with pytest.raises(PresetError, match="fixed here"):  # the preset's own ramp
        live.check("model.deposit", 6.0, 3, 1)
    assert by_key(live.preset)["model.deposit"].fixed == "follows the preset's own linear schedule"
    made, problems = live.apply([("model.sensor_distance", 40.0), ("model.decay", 0.2)], 3, 1)
    assert [c.key for c in made] == ["model.decay"] and "sensor_distance" in problems[0]
    assert live.data["model"]["decay"] == {"ease": "hold", "keys": {0: 0.1, 3: 0.2}}
    assert before["model"]["decay"] == 0.1


def test_a_restart_keeps_the_latest_values_and_takes_the_restart_keys():
    live = performance(LOOKED)
    live.apply([("model.decay", 0.3), ("model.step_size", 1.5)], 9, 3)
    again = live.restarted({"seed": 11, "palette.names": "viridis", "look.curve": "agx"})
    assert again.changes == [] and again.preset.seed == 11
    assert again.data["model"]["decay"] == 0.3
    assert again.data["model"]["step_size"] == {"ease": "hold", "keys": {0: 1.5}}
    assert again.preset.palette.names == ["viridis"] and again.preset.look.curve == "agx"
    with pytest.raises(PresetError):
        live.restarted({"seed": -1})


def play(data: dict, script: list) -> tuple[Performance, list[str]]:
    """Play a performance frame by frame (paused, stepped): script items are a number of frames
    to take or a (key, value) change; returns it and its frames' sha256."""
    session = LiveSession(performance(data), backend="torch", device="cpu").start()
    session.pause()
    shown = []
    try:
        for item in script:
            if isinstance(item, tuple):
                session.change(*item)
                continue
            for _ in range(item):
                session.step_once()
                frame = session.frames.get(timeout=60)
                shown.append(sha(frame.rgb))
        return session.snapshot()[1], shown
    finally:
        session.close()
        assert not session.thread.is_alive()


def rendered(preset) -> list[str]:
    with FrameStream(preset, backend="torch", device="cpu") as stream:
        return [sha(frame.rgb) for frame in stream]


@pytest.mark.parametrize(
    "data, script",
    [
        (LOOKED, [3, ("model.decay", 0.3), ("model.sensor_distance", 7.25), 2, ("look.exposure", 3.0), 3]),
        (SPECIES, [2, ("species.1.model.sensor_angle", 60.0), 2, ("model.turn_angle", 20.0), 2]),
    ],
    ids=["model-and-look", "species"],
)
def test_the_recorded_preset_renders_the_frames_the_loop_showed(data, script):
    live, shown = play(data, script)
    assert len(live.changes) == sum(isinstance(item, tuple) for item in script)
    recorded = live.recorded(len(shown))
    assert rendered(recorded) == shown
    # the changes mattered: the performance without them shows other frames after the first one
    plain = rendered(performance(data).recorded(len(shown)))
    first = script[0]
    assert plain[:first] == shown[:first] and plain[first:] != shown[first:]
