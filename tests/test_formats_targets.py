"""Platform targets (render/formats/targets.py, output.target, render --target): each target's MP4
of a tiny preset is within the table's limits (its frame size, frame rate, duration and bytes,
read back by FFmpeg through PyAV), and what cannot meet a target is refused before work."""

from __future__ import annotations

import av
import numpy as np
import pytest

from physarum.render.base.errors import RenderError
from physarum.render.cli.arguments import flag_settings, parser
from physarum.render.formats.targets import TARGETS, FrameFit
from physarum.render.out.specs import check_outputs
from physarum.render.preset import build_preset
from physarum.render.run import runner
from support import tiny_data


def targeted(name: str, **output):
    data = tiny_data(output={"formats": ["mp4"], "fps": 10, "target": name, **output})
    return build_preset(data, "t.yaml")


def probe(path) -> dict:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = [frame.to_ndarray(format="rgb24") for frame in container.decode(stream)]
        return {
            "size": (stream.codec_context.width, stream.codec_context.height),
            "fps": stream.average_rate,
            "frames": frames,
            "codec": stream.codec_context.name,
        }


@pytest.mark.parametrize("name", list(TARGETS))
def test_each_targets_mp4_is_within_its_limits(tmp_path, name):
    preset = targeted(name)
    target = TARGETS[name]
    result = runner.render(preset, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    found = probe(result.outputs["mp4"])
    width, height = found["size"]
    if target.size is not None:
        assert found["size"] == target.size
    assert max(width, height) <= target.max_side and width % 2 == 0 and height % 2 == 0
    assert found["fps"] <= target.fps and found["codec"] == "h264"
    seconds = len(found["frames"]) / found["fps"]
    assert target.seconds[0] <= seconds <= target.seconds[1]
    assert result.outputs["mp4"].stat().st_size <= target.max_bytes
    assert any(note.startswith(f"mp4 --target {name}:") for note in result.notes)


def test_a_short_render_loops_in_whole_passes_and_pads_with_the_background(tmp_path):
    preset = targeted("instagram-reel")  # 8 frames at 10 fps: 0.8 s, looped 4 times to 3.2 s
    result = runner.render(preset, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    frames = probe(result.outputs["mp4"])["frames"]
    assert len(frames) == 32
    assert np.abs(frames[0].astype(int) - frames[8]).mean() < 1  # the same picture, a pass later
    assert frames[0][:200].max() < 24  # the pad above a 3:2 picture is magma's black


def test_a_long_render_is_trimmed_to_the_longest_duration():
    preset = build_preset(
        tiny_data(
            output={"formats": ["mp4"], "fps": 10, "target": "x"}, run={"steps": 4500, "steps_per_frame": 3}
        ),
        "t.yaml",
    )  # 1500 frames at 10 fps: 150 s, X takes 140
    assert "trimmed to 1400 of 1500 frames" in check_outputs(preset)[0]


def test_crop_keeps_the_middle_at_the_aspect():
    fit = FrameFit((1080, 1920), (0, 0, 18, 32), None, 1, 1, (0, 0, 0), 1)
    picture = np.arange(32 * 48 * 3, dtype=np.uint32).astype(np.uint8).reshape(32, 48, 3)
    assert fit.picture(picture).shape == (1920, 1080, 3)
    note = check_outputs(targeted("tiktok", target_fit="crop"))[0]
    assert "48x32 cropped to 1080x1920" in note


@pytest.mark.parametrize(
    ("output", "run", "words"),
    [
        ({"fps": 100}, None, "at most 60 fps"),
        ({"formats": ["gif"]}, None, "add mp4"),
        ({"loop_mode": "closest"}, None, "closest"),
        ({"fps": 60}, {"steps": 3_000_000, "steps_per_frame": 1}, "bits a pixel"),
    ],
)
def test_refused_before_work_with_why(output, run, words):
    data = tiny_data(output={"formats": ["mp4"], "fps": 10, "target": "discord", **output})
    if run is not None:
        data["run"] = run
        data["canvas"] = {"width": 1280, "height": 1280}
    with pytest.raises(RenderError, match=words):
        check_outputs(build_preset(data, "t.yaml"))


def test_the_flag_is_a_preset_key():
    args = parser().parse_args(["render", "quickstart", "--target", "tiktok"])
    assert "output.target=tiktok" in flag_settings(args)
