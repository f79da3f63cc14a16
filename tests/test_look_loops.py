"""Seamless loops: ping-pong order, the crossfade seam, the closest pair, exactness, bad values."""

from __future__ import annotations

import json

import av
import numpy as np
import pytest
import torch
import yaml
from PIL import Image, ImageSequence

from physarum.render.cli.main import main
from physarum.render.formats.contract import Frame
from physarum.render.formats.registry import read_embedded
from physarum.render.look.colour import make_colourist
from physarum.render.look.loops import PingPong, TrailLoop, Window, closest_pair, crossfade, signature
from physarum.render.preset import build_preset
from physarum.render.preset.provenance import embedded_text
from physarum.render.run import runner
from support import (
    CURATED,
    gif_png_and_loop_on_each_backend,
    problems_of,
    render_cpu,
    tiny_data,
)

RUN = {"steps": 24, "steps_per_frame": 3}  # 8 frames


def loop_preset(mode: str | None, formats=("gif", "png"), **output):
    """The tiny preset, 8 frames, one palette (shown frames are numbered from 0: with palettes
    alternating, a loop that starts later shows other palettes than the plain render)."""
    data = tiny_data(run=RUN, palette={"names": ["magma"]}, output={"formats": list(formats), **output})
    if mode is not None:
        data["output"]["loop_mode"] = mode
    return build_preset(data, "tiny.yaml")


def gif_pictures(path) -> list[np.ndarray]:
    """Every frame of a GIF as RGB (Pillow decodes frames after the first to RGB)."""
    with Image.open(path) as image:
        return [np.array(frame.convert("RGB")) for frame in ImageSequence.Iterator(image)]


# ---------------------------------------------------------------------------------------------
# crossfade


def test_crossfade_shows_frames_n_on_and_its_last_frame_leads_into_its_first():
    frames, n = 6, 2
    preset = build_preset(
        tiny_data(
            run={"steps": frames, "steps_per_frame": 1}, output={"loop_mode": "crossfade", "loop_frames": n}
        ),
        "t.yaml",
    )
    loop = TrailLoop(preset)
    generator = torch.Generator().manual_seed(1)
    trails = [torch.rand(4, 5, generator=generator) * 10 for _ in range(frames)]
    shown = [pair for number, trail in enumerate(trails) for pair in loop.take(number, trail)]
    assert [number for number, _ in shown] == list(range(frames - n)) and loop.frames == frames - n
    assert torch.equal(shown[0][1], trails[n])  # the loop starts at trail[N], unblended
    assert torch.equal(shown[1][1], trails[n + 1])
    for k in range(n):  # frame F-N+k: trail[F-N+k] * (N-k)/(N+1) + trail[k] * (k+1)/(N+1), in float32
        late, early = np.float32((n - k) / (n + 1)), np.float32((k + 1) / (n + 1))
        expected = trails[frames - n + k].numpy() * late + trails[k].numpy() * early
        assert np.array_equal(shown[frames - 2 * n + k][1].numpy(), expected)
    # the seam: the last frame is the blend nearest trail[N-1], which trail[N] (the first) follows
    last = shown[-1][1].numpy().astype(np.float64)
    toward = trails[n - 1].numpy() * n / (n + 1) + trails[-1].numpy() / (n + 1)
    assert np.abs(last - toward).max() < 1e-5


def test_crossfade_is_three_separate_float32_operations():
    late = torch.tensor([1.1, 3.7e5, 2.0**-20], dtype=torch.float32)
    early = torch.tensor([0.3, 1.0e-3, 7.0], dtype=torch.float32)
    got = crossfade(late, early, 0, 3).numpy()
    a, b = np.float32(3 / 4), np.float32(1 / 4)
    assert np.array_equal(got, (late.numpy() * a) + (early.numpy() * b))


def test_a_crossfade_render_shows_the_plain_renders_frames_after_the_first_n(tmp_path):
    plain = gif_pictures(render_cpu(loop_preset(None, ("gif",)), tmp_path / "a").outputs["gif"])
    faded = render_cpu(loop_preset("crossfade", ("gif",), loop_frames=2), tmp_path / "b")
    frames = gif_pictures(faded.outputs["gif"])
    assert len(frames) == len(plain) - 2
    for p in range(len(plain) - 4):  # unblended: the plain frames 2 .. F-3, in order
        assert np.array_equal(frames[p], plain[p + 2])
    assert not np.array_equal(frames[-1], plain[-1])  # blended
    side = json.loads(faded.outputs["json"].read_text())
    assert side["loop"] == {"mode": "crossfade", "frames_shown": 6, "blended": 2, "first_frame": 2}


# ---------------------------------------------------------------------------------------------
# ping-pong


def test_ping_pong_plays_forward_then_backward_in_the_gif_and_the_mp4(tmp_path):
    plain = render_cpu(loop_preset(None, ("gif", "png", "mp4")), tmp_path / "a")
    looped = render_cpu(loop_preset("ping-pong", ("gif", "png", "mp4")), tmp_path / "b")
    forward = gif_pictures(plain.outputs["gif"])
    frames = gif_pictures(looped.outputs["gif"])
    expected = forward + forward[-2:0:-1]  # 0 .. F-1, then F-2 .. 1
    assert len(frames) == len(expected) == 14
    assert all(np.array_equal(a, b) for a, b in zip(frames, expected))
    with av.open(str(looped.outputs["mp4"])) as container:
        assert sum(1 for _ in container.decode(video=0)) == 14
    with Image.open(plain.outputs["png"]) as a, Image.open(looped.outputs["png"]) as b:
        assert np.array_equal(np.array(a), np.array(b))  # the still is the last frame simulated


def test_ping_pong_replays_frames_last_minus_one_to_one_marked():
    recorder = PingPong(last=4)
    for number in range(5):
        recorder.write(Frame(number, np.full((2, 3), number, np.uint8), np.zeros((256, 3), np.uint8)))
    replayed = list(recorder.replay())
    assert [int(f.preview[0, 0]) for f in replayed] == [3, 2, 1]
    assert [f.number for f in replayed] == [5, 6, 7] and all(f.replay for f in replayed)


def test_ping_pong_in_a_frames_folder_writes_the_reversed_frames(tmp_path):
    preset = loop_preset("ping-pong", ("png",))
    runner.render(
        preset, backend="torch", device="cpu", out_dir=tmp_path / "o", frames_dir=tmp_path / "f", quiet=True
    )
    frames = sorted((tmp_path / "f").glob("*.png"))
    assert len(frames) == 14
    read = [np.array(Image.open(p)) for p in frames]
    assert np.array_equal(read[8], read[6]) and np.array_equal(read[13], read[1])
    assert not np.array_equal(read[7], read[6])


# ---------------------------------------------------------------------------------------------
# closest


def test_closest_pair_finds_the_nearest_pair_far_enough_apart():
    signatures = np.array([[0, 0], [9, 9], [5, 1], [0, 1], [9, 8], [5, 1]], dtype=np.int64)
    # frames 10 .. 15; pairs at least 2 apart: (11, 14) differ by 1, (12, 15) by 0
    assert closest_pair(signatures, 10, 2) == (12, 15, 0)
    assert closest_pair(signatures, 10, 4) == (10, 15, 6)  # of (10, 14) 17, (10, 15) 6, (11, 15) 12
    ties = np.zeros((5, 1), dtype=np.int64)
    assert closest_pair(ties, 0, 2) == (0, 2, 0)  # ties: the smallest i, then the smallest j


def test_closest_pair_with_a_minimum_of_four():
    signatures = np.array([[3], [8], [1], [6], [4], [9]], dtype=np.int64)
    # pairs 4 or more apart: (0, 4) 1, (0, 5) 6, (1, 5) 1 -> the tie goes to i = 0
    assert closest_pair(signatures, 0, 4) == (0, 4, 1)


def test_signature_sums_the_index_frame_over_blocks():
    preset = loop_preset(None)
    colourist = make_colourist(preset)
    trail = torch.rand(32, 48, generator=torch.Generator().manual_seed(2)) * 5
    got = signature(colourist, trail)
    index = colourist.index_frame(trail).numpy().astype(np.int64)
    assert got.dtype == np.int64 and got.shape == (256,) and got.sum() == index.sum()
    assert got[0] == index[:2, :3].sum()  # 32 rows / 16, 48 columns / 16


def test_a_closest_render_shows_the_frames_between_the_pair_and_says_how_close(tmp_path):
    plain = gif_pictures(render_cpu(loop_preset(None, ("gif",)), tmp_path / "a").outputs["gif"])
    looped = render_cpu(loop_preset("closest", ("gif",), loop_frames=2), tmp_path / "b")
    loop = json.loads(looped.outputs["json"].read_text())["loop"]
    start, end = loop["first_frame"], loop["end_frame"]
    assert 4 <= start and end - start >= 2 and end <= 7 and loop["frames_shown"] == end - start
    assert loop["distance"] >= 0 and loop["relative"] == pytest.approx(
        loop["distance"] / loop["mean_step_distance"], abs=1e-5
    )
    frames = gif_pictures(looped.outputs["gif"])
    assert len(frames) == end - start
    assert all(np.array_equal(a, b) for a, b in zip(frames, plain[start:end]))


def test_trail_loop_of_a_window_takes_its_frames_only():
    loop = TrailLoop(loop_preset("closest", loop_frames=2), Window(4, 7, 0.0, 1.0))
    taken = [loop.take(n, torch.zeros(1))[0][0] if loop.take(n, torch.zeros(1)) else None for n in range(8)]
    assert taken == [None, None, None, None, 0, 1, 2, None] and loop.done(6) and not loop.done(5)


# ---------------------------------------------------------------------------------------------
# The same bytes on every backend


@pytest.mark.interpreter
@pytest.mark.parametrize("mode", ["crossfade", "closest"])
def test_blended_palettes_and_loops_are_byte_identical_on_torch_and_triton(mode, tmp_path):
    data = tiny_data(
        canvas={"width": 24, "height": 16},
        agents={"count": 120},
        run={"steps": 12, "steps_per_frame": 2},
        palette={"names": ["magma", "ice"], "every": 3, "blend": 2},
        output={"formats": ["gif", "png"], "loop_mode": mode, "loop_frames": 2},
    )
    files = gif_png_and_loop_on_each_backend(build_preset(data, "tiny.yaml"), tmp_path)
    assert files["torch"] == files["triton"]


# ---------------------------------------------------------------------------------------------
# Settings: embedded, reproduced, refused


def test_loop_settings_travel_in_the_embedded_preset(tmp_path):
    preset = loop_preset("crossfade", loop_frames=3)
    text = read_embedded(render_cpu(preset, tmp_path).outputs["gif"])
    again = build_preset(yaml.safe_load(text), "again.yaml")
    assert again.loop == ("crossfade", 3)
    assert "loop_mode" not in embedded_text(loop_preset(None))  # unset keys are not embedded


@pytest.mark.parametrize(
    "output, words",
    [
        ({"loop_mode": "ping-pong", "loop_frames": 2}, "output.loop_frames: only used with"),
        ({"loop_mode": "crossfade", "loop_frames": 5}, "1 to frames // 2 = 4"),
        ({"loop_mode": "closest", "loop_frames": 4}, "allows 2 to 3"),
        ({"loop_mode": "sideways"}, "output.loop_mode"),
    ],
)
def test_bad_loop_settings_are_refused_naming_the_key(output, words):
    problems = problems_of(tiny_data(run=RUN, output=output))
    assert len(problems) == 1 and words in problems[0]


def test_cli_bad_loop_exits_2_with_one_message(write_yaml, tmp_path, capsys):
    path = write_yaml(
        "name: x\nrun: {steps: 8, steps_per_frame: 1}\noutput: {loop_mode: crossfade, loop_frames: 9}\n"
    )
    assert main(["render", str(path), "--out", str(tmp_path / "o"), "--quiet", "--backend", "torch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "output.loop_frames" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").rglob("*"))


def test_loops_in_a_batch_match_the_same_jobs_rendered_alone(tmp_path):
    """A batch sends its frames to encoder processes (a replay flag on ping-pong's replays)."""
    looped = [loop_preset("ping-pong", ("gif", "png")), loop_preset("closest", ("gif", "png"), loop_frames=2)]
    looped[1] = looped[1].model_copy(update={"seed": 4})
    batch = runner.render_batch(looped, backend="torch", device="cpu", out_dir=tmp_path / "batch", quiet=True)
    for preset, result in zip(looped, batch):
        alone = render_cpu(preset, tmp_path / f"alone-{preset.seed}")
        for fmt in ("gif", "png"):
            assert result.outputs[fmt].read_bytes() == alone.outputs[fmt].read_bytes()
        loop = json.loads(result.outputs["json"].read_text())["loop"]
        assert loop == json.loads(alone.outputs["json"].read_text())["loop"]


def test_a_blend_as_long_as_the_block_is_refused_naming_palette_blend():
    problems = problems_of(tiny_data(palette={"every": 3, "blend": 3}))
    assert len(problems) == 1 and "palette.blend: must be less than palette.every (3)" in problems[0]
    assert "blend" not in build_preset(tiny_data(), "t.yaml").to_yaml()  # 0: not embedded
    assert "blend: 2" in build_preset(tiny_data(palette={"every": 3, "blend": 2}), "t.yaml").to_yaml()


def test_a_signal_stops_the_closest_search_between_frames(monkeypatch):
    """SIGTERM or SIGHUP during closest's quadratic search (seconds here, hours on a long run)
    stops it within one frame's comparisons: Terminated, as at the next frame of a render."""
    import threading
    import time

    from physarum.render.base import interrupts

    monkeypatch.setattr(interrupts, "stop_requested", [])
    signatures = np.random.default_rng(5).integers(0, 1 << 20, (3000, 256))  # ~2 s to search
    timer = threading.Timer(0.2, interrupts.stop_requested.append, (15,))
    began = time.perf_counter()
    timer.start()
    with pytest.raises(interrupts.Terminated):
        closest_pair(signatures, 0, 8)
    assert time.perf_counter() - began < 0.2 + 0.5
    timer.join()


def test_a_closest_search_over_its_bound_is_refused_before_any_step():
    """The search compares every pair of settled frames: 200000 frames (1e13 values) is refused
    with its cost stated, before the first pass simulates anything (no simulation is touched)."""
    from physarum.render.base.errors import RenderError
    from physarum.render.look.loops import MAX_CLOSEST_WORK, closest_work, find_windows

    output = {"formats": ["gif"], "loop_mode": "closest", "loop_frames": 8}
    big = build_preset(tiny_data(run={"steps": 200_000, "steps_per_frame": 1}, output=output), "p")
    assert closest_work(big) == (100_000 - 8) * (100_000 - 7) // 2 * 16 * 16 > MAX_CLOSEST_WORK
    with pytest.raises(
        RenderError, match=r"compares every pair of the run's last 100000 frames .*: 1\.28e\+12 values"
    ):
        find_windows([big], simulation=object())  # never advanced
    small = build_preset(tiny_data(output={**output, "loop_frames": 2}), "p")
    assert closest_work(small) <= MAX_CLOSEST_WORK


@pytest.mark.parametrize("frames", [8, 24, 33, 301])
def test_a_loop_share_is_that_share_of_the_frames_so_a_shortened_run_keeps_it(frames):
    share = build_preset(
        tiny_data(
            run={"steps": frames, "steps_per_frame": 1},
            output={"loop_mode": "crossfade", "loop_frames": "50%"},
        ),
        "p",
    )
    assert share.loop == ("crossfade", frames // 2)
    third = build_preset(
        tiny_data(
            run={"steps": frames, "steps_per_frame": 1},
            output={"loop_mode": "closest", "loop_frames": "12.5%"},
        ),
        "p",
    )
    assert third.loop == ("closest", max(2, frames // 8))


@pytest.mark.parametrize("value", ["0%", "101%", "x%", "50", "-5%", "50 %", 0, 100_001])
def test_a_loop_share_or_count_out_of_range_is_refused_naming_both_forms(value):
    problems = problems_of(tiny_data(output={"loop_mode": "crossfade", "loop_frames": value}))
    assert len(problems) == 1 and "output.loop_frames" in problems[0] and "'50%'" in problems[0]


def test_every_curated_preset_stays_valid_when_its_run_is_shortened():
    for path in CURATED:
        data = yaml.safe_load(path.read_text())
        short = {**data, "run": {**data["run"], "steps": 20 * data["run"].get("steps_per_frame", 5)}}
        assert build_preset(short, str(path)).frames == 20, path.name
