"""Platform targets (render/formats/targets.py, output.target, render --target, --gif-target): the
one table of platforms; each target's files of a tiny preset rendered through the command are
within the table's limits (the MP4's frame size, aspect, frame rate, duration, codec and bytes,
read back by FFmpeg through PyAV; the GIF's budget, carried by the preset); --gif-target's
budgets are those it always had (the same GIF bytes), and what cannot meet a target is refused
before work. A target that trims simulates only the frames its MP4 keeps where nothing else reads
past them (counted steps), with the same MP4 bytes as a render of every frame, through each loop,
a sound, `--from` and the sidecar's note."""

from __future__ import annotations

import json
import wave
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
from physarum.render.formats.targets import PLATFORMS, TARGETS, FrameFit, trimmed_run
from physarum.render.out.sinks import FrameQueue
from physarum.render.out.specs import check_outputs, handed_frames
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


# ---------------------------------------------------------------------------------------------
# A trim simulates only what the MP4 keeps


def long_data(loop_mode: str = "none", steps: int = 200, **output) -> dict:
    """200 frames at 1 fps (and a warmup of 5 steps): X keeps the first 140 s."""
    out = {"formats": ["mp4"], "fps": 1, "target": "x", "loop_mode": loop_mode, **output}
    return tiny_data(output=out, run={"steps": steps, "steps_per_frame": 1, "warmup": 5})


def render_counted(preset, out, counted: list[int], **options) -> tuple[runner.RenderResult, int]:
    """A render of `preset` into `out` and the steps it simulated."""
    counted.clear()
    result = runner.render(preset, backend="torch", device="cpu", out_dir=out, quiet=True, **options)
    return result, sum(counted)


@pytest.mark.parametrize(("loop_mode", "simulated"), [("none", 140), ("ping-pong", 140), ("crossfade", 165)])
def test_a_trim_simulates_only_the_kept_frames_with_the_same_bytes(
    tmp_path, steps_simulated, loop_mode, simulated
):
    """X keeps 140 of the frames handed; they come from the first 140 simulated (crossfade: after
    its 25 unshown maps). The render simulates those alone and writes the MP4 a render of every
    frame writes (a frames folder reads them all: today's path, counted)."""
    preset = build_preset(long_data(loop_mode), "t.yaml")
    trimmed, steps = render_counted(preset, tmp_path / "trimmed", steps_simulated)
    whole, all_steps = render_counted(preset, tmp_path / "whole", steps_simulated, frames_dir=tmp_path / "f")
    assert (steps, all_steps) == (5 + simulated, 205)
    assert trimmed.outputs["mp4"].read_bytes() == whole.outputs["mp4"].read_bytes()
    assert len(probe(trimmed.outputs["mp4"])["frames"]) == 140
    notes = json.loads(trimmed.outputs["json"].read_text())["notes"]
    assert f"simulated {simulated} of 200 frames, to step {5 + simulated} of 205" in " ".join(notes)
    assert any("--frames-dir read past them" in note for note in whole.notes)


def test_a_trim_shows_what_run_steps_cut_by_hand_show(tmp_path, steps_simulated):
    """The trimmed MP4's frames are those of the preset with run.steps cut to the kept frames by
    hand (the files differ in the preset they carry, not in a pixel)."""
    trimmed, _ = render_counted(build_preset(long_data(), "t.yaml"), tmp_path / "a", steps_simulated)
    cut, steps = render_counted(build_preset(long_data(steps=140), "t.yaml"), tmp_path / "b", steps_simulated)
    assert steps == 145
    mine, theirs = probe(trimmed.outputs["mp4"])["frames"], probe(cut.outputs["mp4"])["frames"]
    assert len(mine) == len(theirs) == 140
    assert all(np.array_equal(a, b) for a, b in zip(mine, theirs))


def test_what_reads_past_the_trim_keeps_every_frame_simulated():
    """Other formats, a still, fields, volumes, checkpoints and the render's own readers (a
    frames folder, --stats) read past the kept frames: every frame is simulated and the note says
    why; a ping-pong loop whose kept frames reach into its replay needs them all (no note)."""
    handed = 200
    assert trimmed_run(build_preset(long_data(), "t.yaml"), handed).frames == 140
    for output in ({"formats": ["mp4", "gif"]}, {"formats": ["mp4", "png"]}, {"still": {"formats": ["png"]}}):
        preset = build_preset(long_data(**output), "t.yaml")
        trim = trimmed_run(preset, handed)
        assert trim.frames is None and trim.readers
        assert "simulated all 200 frames" in trim.note(preset, 200)
    preset = build_preset(long_data(), "t.yaml")
    assert trimmed_run(preset, handed, ("--stats",)).readers == ("--stats",)
    pong = build_preset(long_data("ping-pong", steps=100), "t.yaml")  # 198 handed, 140 kept
    assert handed_frames(pong) == 198 and trimmed_run(pong, 198) is None
    assert trimmed_run(build_preset(long_data(steps=100), "t.yaml"), 100) is None  # no trim


def test_a_sink_reads_past_the_trim_unless_it_declares_it_reads_no_frame():
    """A caller's sink reads past the kept frames unless it declares reads_frames = False (a
    progress count); a closest loop, whose length is found as it runs, is never trimmed."""

    class Counting:
        reads, replays, reads_frames = frozenset(), True, False

    preset = build_preset(long_data(), "t.yaml")
    assert trimmed_run(preset, 200, sinks=[Counting()]).frames == 140
    trim = trimmed_run(preset, 200, sinks=[Counting(), FrameQueue()])
    assert trim.frames is None and trim.readers == ("the caller's sinks",)
    assert trimmed_run(build_preset(long_data("closest", loop_frames=50), "t.yaml"), 50) is None


def test_a_trimmed_render_with_a_gif_simulates_every_frame(tmp_path, steps_simulated):
    preset = build_preset(long_data(formats=["mp4", "gif"]), "t.yaml")
    result, steps = render_counted(preset, tmp_path, steps_simulated)
    assert steps == 205
    assert any("gif read past them (an MP4 alone simulates 140)" in note for note in result.notes)


def test_from_a_trimmed_mp4_renders_it_again(tmp_path, steps_simulated):
    """--from the targeted MP4 carries the target: the same cut, the same bytes."""
    path = write_preset(tmp_path, long_data(), "long.yaml")
    flags = ["--quiet", "--backend", "torch"]
    assert main(["render", str(path), "--out", str(tmp_path / "a"), *flags]) == 0
    first = tmp_path / "a" / "tiny" / "tiny-s3.mp4"
    steps_simulated.clear()
    assert main(["render", "--from", str(first), "--out", str(tmp_path / "b"), *flags]) == 0
    assert sum(steps_simulated) == 145
    assert (tmp_path / "b" / "tiny" / "tiny-s3.mp4").read_bytes() == first.read_bytes()


def write_tone(path, seconds: int, rate: int = 8000):
    samples = np.round(8000 * np.sin(np.arange(seconds * rate) * 0.05)).astype(np.int16)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.tobytes())
    return path


@pytest.mark.slow
def test_a_trimmed_sound_preset_simulates_the_kept_frames_and_keeps_its_sound(tmp_path, steps_simulated):
    """run.steps: audio (150 s of sound at 1 fps: 150 frames); X keeps 140, sound and all, as
    the render of every frame writes them."""
    data = long_data()
    data["audio"] = {"path": str(write_tone(tmp_path / "tone.wav", 150))}
    data["run"]["steps"] = "audio"
    data["model"]["deposit"] = {"audio": "loudness", "range": [2, 9]}
    preset = build_preset(data, "t.yaml")
    assert preset.frames == 150
    trimmed, steps = render_counted(preset, tmp_path / "trimmed", steps_simulated)
    whole, all_steps = render_counted(preset, tmp_path / "whole", steps_simulated, frames_dir=tmp_path / "f")
    assert (steps, all_steps) == (145, 155)
    assert trimmed.outputs["mp4"].read_bytes() == whole.outputs["mp4"].read_bytes()
    with av.open(str(trimmed.outputs["mp4"])) as container:
        assert len(container.streams.audio) == 1
