"""The time estimate said before a long render (render/run/estimate.py): the simulation's steps
(those the render simulates: a platform target's trim stops it early) and, for a 3D preset, the
ray march of every shown frame (its pixels, samples and lens views)."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import pytest

from physarum.render.preset import build_preset
from physarum.render.run import estimate, runner
from physarum.render.run.estimate import estimate_line, march_seconds, render_seconds, step_seconds
from support import TINY_3D, tiny_3d, tiny_data

ROOT = Path(__file__).resolve().parents[1]


def preset_3d(**camera):
    return build_preset(tiny_3d(camera={**TINY_3D["camera"], **camera}), "t.yaml")


def test_a_3d_renders_estimate_counts_its_ray_march():
    """Frames of 4x the pixels, 4x the samples or 4 lens views take about 4x the march; the
    simulation alone does not see them (a 272 s CPU render was once estimated at 0.08 s)."""
    small = preset_3d(width=100, height=100, samples=32)
    base = render_seconds(small, "cpu", "torch")
    for wider in (
        preset_3d(width=200, height=200, samples=32),
        preset_3d(width=100, height=100, samples=128),
        preset_3d(width=100, height=100, samples=32, depth_of_field={"focus": 0.5, "rays": 4}),
    ):
        assert render_seconds(wider, "cpu", "torch") > 3 * base
    frames = small.frames  # no loop: every frame is shown and marched once
    sample_s, pixel_s = estimate.MARCH["cpu"]
    assert march_seconds(small, "cpu") == frames * 100 * 100 * (32 * sample_s + pixel_s)
    assert march_seconds(build_preset(tiny_data(), "t.yaml"), "cpu") == 0.0


def test_a_long_3d_render_says_its_frames():
    preset = preset_3d(width=1024, height=1024, samples=512)
    line = estimate_line(preset, "cpu", "torch")
    assert line is not None and "16x12x10" in line and "frames of 1024x1024 ray-marched" in line


# ---------------------------------------------------------------------------------------------
# A platform target's trim: the steps the render simulates (out/specs.py render_trim)


def targeted(loop_mode: str = "none", steps: int = 200, **output):
    """200 frames at 1 fps after a warmup of 5 steps, an MP4 alone for X: it keeps 140 s."""
    out = {"formats": ["mp4"], "fps": 1, "target": "x", "loop_mode": loop_mode, **output}
    return build_preset(
        tiny_data(output=out, run={"steps": steps, "steps_per_frame": 1, "warmup": 5}), "t.yaml"
    )


def test_a_trimmed_renders_estimate_counts_the_steps_it_simulates():
    """X keeps 140 of 200 frames: the render simulates 5 + 140 steps (crossfade: its 25 unshown
    maps first), and the estimate counts those; where something reads past the kept frames (a
    GIF, --stats) it counts every step (205), as it does where the target keeps every frame."""
    assert estimate.simulated_steps(targeted()) == 145
    assert estimate.simulated_steps(targeted("crossfade", loop_frames=25)) == 170
    assert estimate.simulated_steps(targeted(formats=["mp4", "gif"])) == 205
    assert estimate.simulated_steps(targeted(), ("--stats",)) == 205
    assert estimate.simulated_steps(targeted(steps=100)) == 105  # no trim
    trimmed, whole = (
        render_seconds(targeted(), "cpu", "torch"),
        render_seconds(targeted(formats=["mp4", "gif"]), "cpu", "torch"),
    )
    assert trimmed == pytest.approx(whole * 145 / 205)


def test_the_estimates_steps_are_the_steps_the_render_simulates(tmp_path, steps_simulated):
    preset = targeted("crossfade", loop_frames=25)
    runner.render(preset, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    assert sum(steps_simulated) == estimate.simulated_steps(preset) == 170


@pytest.fixture
def flat_rate(monkeypatch):
    """A CPU of one rate for an agent- and a cell-step, 7e-8 s (the constants before the fit)."""
    monkeypatch.setitem(estimate.THROUGHPUT, ("cpu", "torch"), (7e-8, 7e-8))


def test_a_long_trimmed_render_says_the_steps_it_simulates(flat_rate):
    """A render of about 3 minutes at 1,000,000 agents: the line says its steps of the preset's."""
    data = tiny_data(
        canvas={"width": 1000, "height": 1000},
        agents={"count": 1_000_000, "spawn": "random"},
        output={"formats": ["mp4"], "fps": 1, "target": "x"},
        run={"steps": 2000, "steps_per_frame": 10, "warmup": 0},
    )
    line = estimate_line(build_preset(data, "t.yaml"), "cpu", "torch")
    assert line is not None
    assert "for 1,400 of 2,000 steps (mp4 --target x keeps 140 of 200 frames)" in line
    assert "about 3 minutes" in line  # 1,400 x 0.14 s, not 2,000 x 0.14 s (5 minutes)


def test_a_trimmed_3d_render_marches_its_kept_frames():
    preset = build_preset(
        tiny_3d(
            output={"formats": ["mp4"], "fps": 1, "target": "x"}, run={"steps": 200, "steps_per_frame": 1}
        ),
        "t.yaml",
    )
    assert estimate.marched_frames(preset) == 140 and estimate.simulated_steps(preset) == 140
    assert estimate.marched_frames(preset, ("--frames-dir",)) == 200


def test_a_resumed_renders_estimate_counts_the_steps_left(flat_rate):
    """A render resumed at step 1,500 of 2,000 simulates 500 steps: its estimate and its line
    count those (it said the whole run's 2,000 steps and 4.7 minutes before)."""
    data = tiny_data(
        canvas={"width": 1000, "height": 1000},
        agents={"count": 1_000_000, "spawn": "random"},
        run={"steps": 2000, "steps_per_frame": 10, "warmup": 0},
    )
    preset = build_preset(data, "t.yaml")
    whole, left = render_seconds(preset, "cpu", "torch"), render_seconds(preset, "cpu", "torch", start=1500)
    assert left == pytest.approx(whole / 4)
    assert estimate.simulated_steps(preset, start=1500) == 500
    line = estimate_line(preset, "cpu", "torch", start=1500)
    assert line is not None and "for 500 steps left of 2,000 (resumed at step 1,500)" in line
    assert (
        "--preview" in estimate_line(preset, "cpu", "torch") and "--preview" not in line
    )  # it keeps its canvas
    assert estimate_line(preset, "cpu", "torch", start=1900) is None  # 100 steps: under a minute


def test_a_resumed_3d_renders_march_is_the_share_left():
    preset = preset_3d(width=100, height=100, samples=32)
    half = preset.end_step // 2
    whole, left = render_seconds(preset, "cpu", "torch"), render_seconds(preset, "cpu", "torch", start=half)
    assert left == pytest.approx(whole * (preset.end_step - half) / preset.end_step)


def test_render_resume_estimates_from_its_checkpoints_step(tmp_path, monkeypatch):
    """`physarum render --resume CHECKPOINT` asks the estimate from the checkpoint's step."""
    from physarum.render.cli.main import main
    from support import write_preset

    data = tiny_data(run={"steps": 22, "steps_per_frame": 3, "warmup": 2}, output={"formats": ["png"]})
    flags = ["--backend", "torch", "--device", "cpu", "--out", str(tmp_path / "o")]
    assert (
        main(["render", str(write_preset(tmp_path, data)), "--checkpoint-at", "14", *flags, "--quiet"]) == 0
    )
    starts = []
    monkeypatch.setattr(estimate, "estimate_line", lambda *args, **kw: starts.append(args[4]))
    checkpoint = next((tmp_path / "o" / "tiny").glob("*checkpoint-14*"))
    assert main(["render", "--resume", str(checkpoint), *flags]) == 0
    assert starts == [14]


# ---------------------------------------------------------------------------------------------
# The CPU constants against the measured steps (the harness's case estimate)


def test_a_cpu_step_whose_trails_pass_the_cache_costs_more_per_cell():
    """Four species' trails on 1024^2 (4M cells) fall out of the CPU's cache: tribes's estimate is
    more than 4 times its half size's (measured 231 against 21 ms a step); a GPU's is not."""
    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path
    from physarum.render.preset.reduce import reduce_preset

    tribes = load_preset(resolve_preset_path("tribes"))
    half = reduce_preset(tribes, Fraction(1, 2), "reduce")[0]
    assert estimate.cpu_spill(4 << 20) == 2.0 and estimate.cpu_spill(1 << 20) == 1.0
    assert render_seconds(tribes, "cpu", "torch") > 7 * render_seconds(half, "cpu", "torch")
    assert render_seconds(tribes, "cuda", "triton") < 4.2 * render_seconds(half, "cuda", "triton")


# The estimate of a CPU step is this many times each measured one, at least and at most
BOUNDS = (0.9, 2.3)


def measured_steps() -> list[dict]:
    """The case estimate's rows in the 2-core CPU's committed table."""
    from physarum.render.tools import harness

    rows = harness.read_table(ROOT / "benchmarks" / "unreleased" / "table-cpu-2core.csv")
    return [row for row in rows if row["case"] == "estimate"]


def test_the_cpu_estimate_bounds_each_measured_step(monkeypatch):
    """Every curated preset measured at full size, half size and its preview (ten 2D presets and
    five 3D ones, the mean step of each whole run): the estimate of a step (a volume's ray march
    apart) is BOUNDS times what it took; each row's preset is made as the case made it (its
    sized_preset)."""
    from physarum.render.tools import harness

    monkeypatch.setattr(harness, "CASES", {})
    monkeypatch.delitem(sys.modules, "cases_step", raising=False)
    harness.load_cases(ROOT / "scripts" / "cases")
    sized_preset = sys.modules["cases_step"].sized_preset
    rows = measured_steps()
    assert len({row["variant"].split()[0] for row in rows}) >= 15
    assert {row["variant"].split()[1] for row in rows} == {"full", "half", "preview"}
    dims = set()
    for row in rows:
        sized = sized_preset(*row["variant"].split())
        dims.add(sized.dims)
        assert row["extra"]["steps"] == sized.end_step  # the whole run's mean
        assert row["extra"]["agents"] == sized.agents.count
        step_ms = step_seconds(sized, "cpu", "torch") * 1e3
        low, high = BOUNDS
        assert low <= step_ms / float(row["median_ms"]) <= high, (row["variant"], step_ms, row["median_ms"])
    assert dims == {2, 3}
