"""GIF byte budgets: the chosen GIF fits budgets and sizes drawn here, the choice depends on the
frames and the budget only, and an impossible budget is refused before rendering."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from physarum.render.formats.contract import Frame
from physarum.render.formats.gif import GifSpec, GifWriter
from physarum.render.formats.gif_budget import FrameStore, candidates, minimum_bytes, sample_frames
from physarum.render.formats.gif_file import Digits
from physarum.render.look.colour import palette_table

PALETTES = [palette_table("magma"), palette_table("ice")]


def _frames(rng, width: int, height: int, count: int) -> list[np.ndarray]:
    """Smooth, drifting index frames with noise: compressible, but not trivially."""
    y, x = np.mgrid[0:height, 0:width]
    frames = []
    for f in range(count):
        wave = 127 + 100 * np.sin((x + 3 * f) / 7.0) * np.cos((y - 2 * f) / 11.0)
        noise = rng.integers(-20, 21, (height, width))
        frames.append(np.clip(wave + noise, 0, 255).astype(np.uint8))
    return frames


def _write(path: Path, frames, budget, processes=1, every=4) -> tuple[bytes, dict | None]:
    height, width = frames[0].shape
    spec = GifSpec(
        path, width, height, 25, 0, "preset", PALETTES[0].tobytes(), budget, len(frames), (256, 1), processes
    )
    writer = GifWriter(spec)
    for number, index in enumerate(frames):
        writer.write(Frame(number, index, PALETTES[(number // every) % 2]))
    writer.commit()
    return path.read_bytes(), writer.report


def test_budgets_hold_for_drawn_sizes_and_budgets(tmp_path):
    rng = np.random.default_rng()  # sizes and budgets the test does not know in advance
    seed = int(rng.integers(1 << 30))
    rng = np.random.default_rng(seed)
    for trial in range(4):
        width, height, count = (
            int(v) for v in (rng.integers(40, 180), rng.integers(40, 180), rng.integers(6, 30))
        )
        frames = _frames(rng, width, height, count)
        full, _ = _write(tmp_path / f"full{trial}.gif", frames, None)
        budget = int(len(full) * rng.uniform(0.05, 0.9))
        try:
            data, report = _write(tmp_path / f"b{trial}.gif", frames, budget)
        except OSError as error:  # below what the smallest candidate takes: it must say so
            assert "fits output.gif_max_bytes" in str(error), seed
            continue
        assert len(data) <= budget, (seed, width, height, count, budget, report)
        assert report["bytes"] == len(data) and report["max_bytes"] == budget


def test_choice_and_bytes_are_the_same_whatever_the_processes(tmp_path):
    frames = _frames(np.random.default_rng(5), 96, 72, 17)
    full, _ = _write(tmp_path / "full.gif", frames, None)
    one, first = _write(tmp_path / "one.gif", frames, len(full) // 4, processes=1)
    two, second = _write(tmp_path / "two.gif", frames, len(full) // 4, processes=2)
    cost = [report.pop("cost") for report in (first, second)]  # seconds and batches: this machine's
    assert one == two and first == second and all(c["estimates"] >= 1 for c in cost)
    assert first["levels"] < 256 or first["downscale"] > 1 or first["stride"] > 1


def test_a_budget_the_full_gif_fits_keeps_the_full_gif(tmp_path):
    frames = _frames(np.random.default_rng(6), 64, 48, 9)
    full, _ = _write(tmp_path / "full.gif", frames, None)
    budgeted, report = _write(tmp_path / "b.gif", frames, 2 * len(full))
    assert (report["levels"], report["downscale"], report["stride"]) == (256, 1, 1)
    assert budgeted == full


def test_candidates_start_full_and_shrink_to_a_single_frame():
    order = candidates(200, 100, 12, Digits())
    assert (order[0].levels, order[0].factor, order[0].stride) == (256, 1, 1)
    assert order[-1].stride == 12 and len(set(order)) == len(order)
    assert all(r.levels == 256 for r in candidates(200, 100, 12, Digits(16, 2)))


def test_sample_depends_on_the_frame_count_alone():
    assert sample_frames(5) == [0, 1, 2, 3, 4]
    assert sample_frames(120) == sample_frames(120) and len(sample_frames(120)) == 12


def test_frame_store_gives_back_frames_and_palettes():
    store = FrameStore()
    frames = _frames(np.random.default_rng(7), 30, 20, 3)
    for number, index in enumerate(frames):
        store.append(index, PALETTES[number % 2])
    index, palette = store.frame(1)
    assert np.array_equal(index, frames[1]) and palette == PALETTES[1].tobytes()
    store.close()


def test_minimum_is_below_any_written_budgeted_gif(tmp_path):
    frames = _frames(np.random.default_rng(8), 80, 80, 10)
    palettes = [PALETTES[(n // 4) % 2].tobytes() for n in range(10)]
    least = minimum_bytes(80, 80, palettes, Digits(), 0, "preset")
    with pytest.raises(OSError, match="fits output.gif_max_bytes"):
        _write(tmp_path / "x.gif", frames, least - 1)
    assert not (tmp_path / "x.gif").exists()


@pytest.mark.parametrize("fps", [1, 3, 30, 50, 100])
def test_no_candidate_stride_overflows_a_16_bit_delay(fps):
    """A stride's delay is 16 bits of centiseconds (and a pool task's stride 16 bits): at 1 fps
    a stride of 656 frames overflowed (Pillow's OverflowError, a traceback), at 100 fps 65536."""
    from physarum.render.formats.gif_file import MAX_DELAY_CS, delay_ms, max_stride

    order = candidates(64, 64, 70_000, Digits(), fps)
    longest = max(r.stride for r in order)
    assert longest == max_stride(fps) and delay_ms(fps, longest) // 10 <= MAX_DELAY_CS
    assert delay_ms(fps, longest + 1) // 10 > MAX_DELAY_CS
    assert minimum_bytes(8, 8, [bytes(768)] * 70_000, Digits(), 0, "c") > 0  # no OverflowError


@pytest.mark.parametrize(
    "loop_mode, frames, refused",
    [(None, 65535, False), (None, 65536, True), ("ping-pong", 32768, True), ("ping-pong", 32767, False)],
)
def test_a_budgeted_gif_over_its_frame_limit_is_refused_by_the_formats_check(loop_mode, frames, refused):
    from physarum.render.base.errors import RenderError
    from physarum.render.formats.gif import FORMAT, MAX_BUDGET_FRAMES
    from support import build_preset, tiny_data

    output = {"formats": ["gif"], "gif_max_bytes": 10**6, **({"loop_mode": loop_mode} if loop_mode else {})}
    preset = build_preset(tiny_data(run={"steps": frames, "steps_per_frame": 1}, output=output), "t.yaml")
    assert preset.frames == frames
    if not refused:
        assert FORMAT.check(preset) == []
        return
    with pytest.raises(RenderError, match=f"holds at most {MAX_BUDGET_FRAMES} frames"):
        FORMAT.check(preset)


def test_frames_with_their_own_palettes_count_a_local_table_each(tmp_path):
    """A 3D preset's frames each have their own palette (render/look/volume.py reduce_rgb), made
    only as they render: the bound counts a local table for every frame, and no GIF is below it."""
    frames = _frames(np.random.default_rng(9), 80, 80, 10)
    own = [np.roll(PALETTES[1], n + 1, axis=0) for n in range(10)]  # none is the global table
    height, width = frames[0].shape
    shared = [PALETTES[0].tobytes()] * 10
    least = minimum_bytes(80, 80, shared, Digits(), 0, "preset", local=True)
    assert least - minimum_bytes(80, 80, shared, Digits(), 0, "preset") == 48  # one frame kept, 16 levels
    spec = GifSpec(tmp_path / "x.gif", width, height, 25, 0, "preset", shared[0], least - 1, 10, (256, 1), 1)
    writer = GifWriter(spec)
    with pytest.raises(OSError, match="fits output.gif_max_bytes"):
        for number, index in enumerate(frames):
            writer.write(Frame(number, index, own[number]))
        writer.commit()
    assert not (tmp_path / "x.gif").exists()


def test_a_budgeted_3d_gif_keeps_its_background_where_levels_are_reduced(tmp_path):
    """A 3D frame's own palette is sorted by luma, black (the background) first: a budget that
    reduces its levels shows the darkest group by its pixels' colours, so the background stays
    nearer black than the group's middle entry (what level_palette would show)."""
    from physarum.render.formats.gif_file import level_palette
    from physarum.render.preset import build_preset
    from support import render_cpu, tiny_3d

    data = tiny_3d(output={"formats": ["gif"]})
    full = render_cpu(build_preset(data, "tiny3d.yaml"), tmp_path / "full").outputs["gif"]
    data["output"]["gif_max_bytes"] = full.stat().st_size - 1
    result = render_cpu(build_preset(data, "tiny3d.yaml"), tmp_path / "budget")
    plan = json.loads(result.outputs["json"].read_text())["gif_budget"]
    assert plan["levels"] < 256 and plan["downscale"] == 1
    with Image.open(full) as whole, Image.open(result.outputs["gif"]) as budgeted:
        palette = bytes(whole.getpalette()[:768])  # frame 0's own palette, as its global table
        middle = level_palette(palette, plan["levels"])[:3]
        corner = budgeted.convert("RGB").getpixel((0, 0))
    assert whole.convert("RGB").getpixel((0, 0)) == (0, 0, 0) and sum(middle) > 0
    assert sum(corner) < sum(middle)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_gif_that_fits_is_written_from_the_blocks_made_while_its_frames_arrived(tmp_path, processes):
    """The first candidate's blocks are made as the frames arrive: a GIF that fits its budget
    costs no compression after its last frame (its estimate read from those blocks, the file
    those blocks), and is the unbudgeted GIF byte for byte."""
    frames = _frames(np.random.default_rng(6), 64, 48, 9)
    full, _ = _write(tmp_path / "full.gif", frames, None)
    budgeted, report = _write(tmp_path / "b.gif", frames, 2 * len(full), processes)
    assert budgeted == full
    cost = report["cost"]
    assert cost["first_from_render"] and cost["estimates"] == 0 and cost["frames_compressed"] == 0
    assert cost["seconds"] >= 0


def test_a_budget_past_the_first_candidate_drops_its_blocks_and_chooses_as_before(tmp_path):
    """Blocks past the budget are dropped as the frames arrive (the first candidate cannot fit):
    the choice is then made from the kept frames, the estimates computed `ahead` at a time in one
    batch, with the same bytes and report as one estimate at a time."""
    from dataclasses import replace as with_budget

    from physarum.render.formats.gif_budget import Budgeter
    from physarum.render.formats.gif_pool import CompressPool

    frames = _frames(np.random.default_rng(5), 96, 72, 17)
    full, _ = _write(tmp_path / "full.gif", frames, None)
    budget = len(full) // 5
    data, report = _write(tmp_path / "b.gif", frames, budget, processes=2)
    assert not report["cost"]["first_from_render"] and report["cost"]["estimates"] > 1
    height, width = frames[0].shape
    spec = GifSpec(tmp_path / "x.gif", width, height, 25, 0, "preset", PALETTES[0].tobytes(), budget, 17)
    store = FrameStore()
    for number, index in enumerate(frames):
        store.append(index, PALETTES[(number // 4) % 2])
    written = []
    with CompressPool(2) as pool:
        for ahead in (1, 4):
            budgeter = Budgeter(store, with_budget(spec, max_bytes=budget), Digits(), pool)
            budgeter.ahead = ahead
            with open(tmp_path / f"ahead{ahead}.gif", "w+b") as file:
                plan = budgeter.write(file)
            written.append(((tmp_path / f"ahead{ahead}.gif").read_bytes(), plan.passed, plan.reduction))
    store.close()
    assert written[0] == written[1] and written[0][0] == data


@pytest.mark.parametrize("processes", [1, 4])
def test_sample_estimates_made_as_the_frames_arrive_change_nothing_but_the_end(tmp_path, processes):
    """Once the first candidate passes its budget, each sample frame is compressed at the first
    estimates' (levels, factor) as it arrives: the same GIF and choice as a writer that expects
    no frame count (and so makes none early), with fewer frames compressed after the last."""
    frames = _frames(np.random.default_rng(11), 120, 90, 30)
    full, _ = _write(tmp_path / "full.gif", frames, None)
    budget = len(full) // 6
    height, width = frames[0].shape
    results = []
    for expected in (len(frames), 0):
        spec = GifSpec(
            tmp_path / f"e{expected}.gif", width, height, 25, 0, "preset", PALETTES[0].tobytes(), budget,
            expected, (256, 1), processes,
        )  # fmt: skip
        writer = GifWriter(spec)
        for number, index in enumerate(frames):
            writer.write(Frame(number, index, PALETTES[(number // 4) % 2]))
        writer.commit()
        results.append((spec.path.read_bytes(), dict(writer.report)))
    (early, early_report), (late, late_report) = results
    early_cost, late_cost = early_report.pop("cost"), late_report.pop("cost")
    assert early == late and early_report == late_report
    assert early_report["levels"] < 256 or early_report["downscale"] > 1 or early_report["stride"] > 1
    assert early_cost["frames_compressed"] < late_cost["frames_compressed"]
