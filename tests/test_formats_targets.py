"""Platform targets (render/formats/targets.py, output.target, render --target, --gif-target): the
one table of platforms; each target's files of a tiny preset rendered through the command are
within the table's limits (the MP4's frame size, aspect, frame rate, duration, codec and bytes,
read back by FFmpeg through PyAV; the GIF's budget, carried by the preset); --gif-target's
budgets are those it always had (the same GIF bytes), and what cannot meet a target is refused
before work."""

from __future__ import annotations

from fractions import Fraction

import av
import numpy as np
import pytest
import yaml

from physarum.render.base.errors import RenderError
from physarum.render.cli.arguments import flag_settings, parser
from physarum.render.cli.main import main
from physarum.render.formats.gif_targets import GIF_TARGETS
from physarum.render.formats.registry import read_embedded
from physarum.render.formats.targets import PLATFORMS, TARGETS, FrameFit
from physarum.render.out.specs import check_outputs
from physarum.render.preset import build_preset
from physarum.render.run import runner
from support import tiny_data, write_preset


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


def probe_duration(path) -> float:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return float(stream.duration * stream.time_base)


FIXED_SIZE = [name for name, target in TARGETS.items() if target.size is not None]  # 1080-wide frames


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in FIXED_SIZE else n for n in TARGETS]
)
def test_each_targets_files_are_within_its_limits(tmp_path, name):
    """The command's --target NAME: the MP4 decoded (side, aspect, fps, duration, codec, bytes)
    and the GIF (its budget, the preset's key) against the platform's row."""
    path = write_preset(tmp_path, tiny_data(output={"formats": ["gif", "mp4"], "fps": 10}), "tiny.yaml")
    out = tmp_path / "out"
    assert (
        main(["render", str(path), "--out", str(out), "--quiet", "--backend", "torch", "--target", name]) == 0
    )
    target, mp4, gif = TARGETS[name], out / "tiny" / "tiny-s3.mp4", out / "tiny" / "tiny-s3.gif"
    found = probe(mp4)
    width, height = found["size"]
    if target.size is not None:
        assert found["size"] == target.size
    else:  # the picture's aspect (48x32), its sides even: within a pixel
        assert abs(Fraction(width, height) - Fraction(48, 32)) <= Fraction(2, height)
    assert max(width, height) <= target.max_side and width % 2 == 0 and height % 2 == 0
    assert found["fps"] <= target.fps and found["codec"] == target.codec
    seconds = len(found["frames"]) / found["fps"]
    assert target.seconds[0] <= seconds <= target.seconds[1]
    assert target.seconds[0] <= probe_duration(mp4) <= target.seconds[1]
    assert mp4.stat().st_size <= target.max_bytes
    budget = yaml.safe_load(read_embedded(gif))["output"].get("gif_max_bytes")
    assert budget == target.gif_bytes  # None: no GIF budget on that platform
    assert gif.stat().st_size <= (target.gif_bytes or gif.stat().st_size)


def test_the_table_is_one_and_its_views_agree():
    for name, row in PLATFORMS.items():
        assert row.read and row.pages, name
        assert (row.max_side is not None) == (name in TARGETS)
        assert (row.gif_bytes is not None) == (name in GIF_TARGETS)
        if row.max_side is not None:
            assert None not in (row.fps, row.seconds, row.codec, row.max_bytes), name
    assert set(TARGETS) | set(GIF_TARGETS) == set(PLATFORMS)
    assert {name: GIF_TARGETS[name] for name in TARGETS if name in GIF_TARGETS} == {
        name: row.gif_bytes for name, row in TARGETS.items() if row.gif_bytes is not None
    }


# the budgets --gif-target named before the table was one (render/formats/gif_targets.py then)
GIF_TARGETS_BEFORE = {
    "x": 15_000_000,
    "discord": 10_000_000,
    "slack": 5_000_000,
    "telegram": 5_000_000,
    "phone": 5_000_000,
    "preview": 2_000_000,
}


def test_gif_target_keeps_its_budgets_and_bytes(tmp_path):
    assert {name: GIF_TARGETS[name] for name in GIF_TARGETS_BEFORE} == GIF_TARGETS_BEFORE
    assert list(GIF_TARGETS)[: len(GIF_TARGETS_BEFORE)] == list(GIF_TARGETS_BEFORE)  # --help's order
    path = write_preset(tmp_path, tiny_data(output={"formats": ["gif"], "fps": 10}), "tiny.yaml")
    made = {}
    for flags in (["--gif-target", "slack"], ["--gif-max-bytes", "5000000"]):
        out = tmp_path / flags[0]
        assert main(["render", str(path), "--out", str(out), "--quiet", "--backend", "torch", *flags]) == 0
        made[flags[0]] = (out / "tiny" / "tiny-s3.gif").read_bytes()
    assert made["--gif-target"] == made["--gif-max-bytes"]


@pytest.mark.parametrize("name", list(TARGETS))
def test_target_sets_the_gif_budget_where_the_platform_has_one(name):
    settings = flag_settings(parser().parse_args(["render", "quickstart", "--target", name]))
    budget = [s for s in settings if s.startswith("output.gif_max_bytes=")]
    assert budget == ([f"output.gif_max_bytes={name}"] if TARGETS[name].gif_bytes else [])
    flags = ["render", "quickstart", "--target", name, "--gif-target", "preview"]
    assert "output.gif_max_bytes=preview" in flag_settings(parser().parse_args(flags))  # a budget flag wins


def test_render_help_lists_the_targets_gif_budgets():
    text = parser()._subparsers._group_actions[0].choices["render"].format_help()
    assert all(
        f"{name} {TARGETS[name].gif_bytes / 1e6:g} MB" in " ".join(text.split()) for name in ("x", "discord")
    )


@pytest.mark.slow
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
        ({"mp4": "hevc"}, None, "takes H264 .*output.mp4 is hevc"),
        ({"mp4": "master"}, None, "takes H264 .*output.mp4 is master"),
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
