"""render/preset/reduce.py: a preset reduced to a smaller canvas keeps its density, its scaled
distances and diffusion, its images, and says how it was reduced."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import yaml

from physarum.render.preset import load_preset
from physarum.render.preset.images import box_resize, preset_pixels, read_grey
from physarum.render.preset.load import build_preset
from physarum.render.preset.reduce import (
    LARGER_WINDOW_WORK,
    LARGER_WINDOWS,
    MAX_THINNING,
    MIN_SENSOR_PIXELS,
    MIN_STEP_PIXELS,
    PREVIEW_FRAME_3D,
    PREVIEW_FRAMES_3D,
    PREVIEW_WORK,
    TEXTURE_SENSOR_PIXELS,
    THINNED_FLOOR_WORK,
    THINNED_FLOORS,
    floor_ratio,
    is_shaped,
    is_window,
    moves_a_front,
    preview_ratio,
    preview_shortfall,
    reduce_preset,
    reduced_work,
    sensor_pixels,
    side_ratio,
    step_pixels,
    thinning,
    window_scale,
)
from physarum.render.preset.schedule import keyframe_values
from support import ROOT, save_image, tiny_data, world_data, write_preset


def curated(name: str):
    return load_preset(ROOT / "presets" / f"{name}.yaml")


@pytest.mark.parametrize("name", ["labyrinth", "anywhere", "journey", "rivals", "lettering", "panorama"])
def test_a_reduction_keeps_density_and_scales_distances_and_diffuse(name):
    preset = curated(name)
    reduced, _ = reduce_preset(preset, side_ratio(preset, 256), "reduce")
    short, small = min(preset.canvas.width, preset.canvas.height), 256
    ratio = Fraction(small, short)
    assert min(reduced.canvas.width, reduced.canvas.height) == small
    assert reduced.canvas.width == round(preset.canvas.width * ratio)
    area = Fraction(reduced.canvas.width * reduced.canvas.height, preset.canvas.width * preset.canvas.height)
    assert reduced.agents.count == round(preset.agents.count * area)  # agents per pixel kept
    assert reduced.run == preset.run and reduced.palette == preset.palette
    for s in range(preset.species_count):
        before, after = preset.species_model(s), reduced.species_model(s)
        for key in ("sensor_distance", "step_size"):  # in pixels, whatever the units
            for b, a in zip(keyframe_values(getattr(before, key)), keyframe_values(getattr(after, key))):
                assert after.to_pixels(a, small) == float(Fraction(before.to_pixels(b, short)) * ratio)
        for b, a in zip(keyframe_values(before.diffuse), keyframe_values(after.diffuse)):
            on_canvas = Fraction(before.diffuse_on(b, short)) * ratio**2
            assert after.diffuse_on(a, small) == pytest.approx(float(on_canvas), rel=1e-12)
        assert (after.decay, after.deposit, after.sensor_angle) == (
            before.decay,
            before.deposit,
            before.sensor_angle,
        )


def test_a_scheduled_distance_is_scaled_keyframe_by_keyframe():
    preset = build_preset(
        tiny_data(canvas={"width": 64, "height": 64}, model={"step_size": {"keys": {0: 1.0, "50%": 2.0}}}),
        "t.yaml",
    )
    reduced, _ = reduce_preset(preset, Fraction(1, 2), "reduce")
    assert reduced.model.step_size.keys == {0: 0.5, "50%": 1.0}
    assert reduced.model.diffuse == 0.125 and reduced.model.sensor_distance == 2.5


def test_the_note_says_how_it_was_reduced_and_the_description_carries_it():
    preset = curated("labyrinth")
    reduced, note = reduce_preset(preset, side_ratio(preset, 256), "reduce")
    assert note == "reduce: 1024x1024 -> 256x256, 2,000,000 -> 125,000 agents, distances / 4"
    assert reduced.description.endswith(f"({note})")


@pytest.mark.parametrize("name", ["labyrinth", "journey", "cells", "panorama", "quickstart"])
def test_a_preview_of_a_uniform_pixel_texture_is_a_window_at_full_scale(name):
    preset = curated(name)  # random spawn, no world, pixel units, sensors of 12 pixels or fewer
    assert is_window(preset, side_ratio(preset, 256)) and preview_ratio(preset, 256) == side_ratio(
        preset, 256
    ) * LARGER_WINDOWS.get(name, 1)  # cells states a 512 window
    reduced, note = reduce_preset(preset, side_ratio(preset, 256))
    assert min(reduced.canvas.width, reduced.canvas.height) == 256 and note.endswith(
        "distances kept (a window)"
    )
    area = Fraction(reduced.canvas.width * reduced.canvas.height, preset.canvas.width * preset.canvas.height)
    assert reduced.agents.count == round(preset.agents.count * area)
    assert reduced.model == preset.model and reduced.species == preset.species  # distances, diffuse kept


@pytest.mark.parametrize(("name", "texture"), [("cave", 683)])
def test_a_texture_with_a_larger_sensor_is_a_window_of_it_reduced_to_that_sensor(name, texture):
    """A texture whose sensor 256 would bring under MIN_SENSOR_PIXELS (cave's 18 to 4.5) is
    a 256 window of the texture reduced so far that its sensor is TEXTURE_SENSOR_PIXELS (cave's
    at 683: 18 / 1.5), no further: the agents per pixel kept, distances and diffuse reduced by
    window_scale."""
    preset = curated(name)
    ratio = side_ratio(preset, 256)
    assert is_window(preset, ratio) and sensor_pixels(preset) * ratio < MIN_SENSOR_PIXELS
    scale = window_scale(preset)
    assert scale < 1 and sensor_pixels(preset) * scale == TEXTURE_SENSOR_PIXELS
    assert preview_ratio(preset, 256) == ratio
    reduced, note = reduce_preset(preset, ratio)
    assert (reduced.canvas.width, reduced.canvas.height) == (256, 256)
    assert note.endswith(f"(a window of {texture}x{texture})") and reduced.agents.count == round(
        preset.agents.count * ratio**2
    )
    assert sensor_pixels(reduced) == TEXTURE_SENSOR_PIXELS
    assert reduced.model.step_size == float(Fraction(preset.model.step_size) * scale)
    assert reduced.model.diffuse == float(Fraction(preset.model.diffuse) * scale**2)
    assert reduce_preset(preset, ratio, "reduce")[1].endswith("distances / 4")  # --reduce scales


@pytest.mark.parametrize(
    "name",
    [
        "anywhere",
        "bloom",
        "compass",
        "feast",
        "lettering",
        "maze",
        "rings",
        "rivals",
        "tribes",
        "veins",
        "crowd",
    ],
)
def test_a_preview_of_a_composition_or_short_side_preset_is_scaled(name):
    preset = curated(name)  # short_side units, a spawn shape or image, a world, species, or a
    assert not is_window(preset, side_ratio(preset, 256))  # texture whose sensor stays 6 pixels
    reduced, note = reduce_preset(preset, preview_ratio(preset, 256))
    assert "distances /" in note


def test_the_reduced_preset_reads_back_as_itself():
    preset = curated("rivals")
    reduced, _ = reduce_preset(preset, Fraction(1, 4), "reduce")
    again = build_preset(yaml.safe_load(reduced.to_yaml()), "again.yaml")
    assert again == reduced


def test_no_reduction_returns_the_preset_itself():
    preset = curated("quickstart")
    assert reduce_preset(preset, Fraction(1)) == (preset, "")
    assert side_ratio(preset, 4096) == 1  # never enlarged


def test_checkpoints_and_fields_survive_the_reduction():
    preset = build_preset(
        tiny_data(
            canvas={"width": 64, "height": 64},
            checkpoint={"at": [6]},
            output={"formats": ["gif"], "fields": {"at": [9]}},
        ),
        "t.yaml",
    )
    reduced, _ = reduce_preset(preset, Fraction(1, 2))
    assert reduced.checkpoint == preset.checkpoint and reduced.output.fields == preset.output.fields


def test_images_are_box_resized_onto_the_reduced_canvas(tmp_path):
    rng = np.random.default_rng(5)
    for name in ("wall.png", "gradient.png", "square.png"):
        save_image(tmp_path / name, rng.integers(0, 256, (32, 48)))
    preset = load_preset(write_preset(tmp_path, world_data()))
    reduced, note = reduce_preset(preset, Fraction(1, 2))
    assert (reduced.canvas.width, reduced.canvas.height) == (24, 16) and "48x32 -> 24x16" in note
    assert reduced.agents.count == 100 and reduced.world.food == preset.world.food
    wall = reduced.world.walls.path
    np.testing.assert_array_equal(preset_pixels(reduced, wall), box_resize(read_grey(wall), 24, 16))


@pytest.mark.parametrize("name", ["maze", "feast", "lettering", "rivals"])
def test_a_preview_stops_reducing_where_a_sensor_would_fall_below_the_floor(name):
    preset = curated(name)
    ratio = preview_ratio(preset, 256)
    short = min(preset.canvas.width, preset.canvas.height)
    side = short * ratio
    assert side.denominator == 1 and side > 256  # a whole side, larger than 256
    assert sensor_pixels(preset) * side_ratio(preset, 256) < MIN_SENSOR_PIXELS  # 256 was too small
    # the smallest side with the sensor at the floor, or the largest within the work
    at_floor = sensor_pixels(preset) * ratio >= MIN_SENSOR_PIXELS
    assert at_floor or reduced_work(preset, Fraction(side + 1, short)) > PREVIEW_WORK
    assert not at_floor or sensor_pixels(preset) * Fraction(side - 1, short) < MIN_SENSOR_PIXELS
    assert reduced_work(preset, ratio) <= PREVIEW_WORK
    reduced, note = reduce_preset(preset, ratio)
    sides = (reduced.canvas.width, reduced.canvas.height)
    assert min(sides) == side and f"-> {sides[0]}x{sides[1]}," in note


def test_the_work_bounds_a_preview_that_the_floor_would_make_large():
    data = yaml.safe_load((ROOT / "presets" / "labyrinth.yaml").read_text())
    data["world"] = {"boundary": "reflect"}  # not a window: sensors 4 pixels, the floor asks for 1024
    preset = build_preset(data, "t.yaml")
    ratio = preview_ratio(preset, 256)
    side = int(1024 * ratio)
    assert 256 < side < 1024 and sensor_pixels(preset) * ratio < MIN_SENSOR_PIXELS
    assert reduced_work(preset, ratio) <= PREVIEW_WORK < reduced_work(preset, Fraction(side + 1, 1024))


@pytest.mark.parametrize("name", ["anywhere", "veins", "crowd"])
def test_a_preview_keeps_256_where_the_sensor_stays(name):
    preset = curated(name)  # sensors >= 6 pixels at 256 (anywhere: short_side units)
    assert preview_ratio(preset, 256) == side_ratio(preset, 256)


def test_a_preview_keeps_256_where_the_work_is_spent_there():
    """tribes under another name (THINNED_FLOORS states nothing for it): its four species'
    trails cost past PREVIEW_WORK at 256 already, so its preview stays at 256."""
    preset = curated("tribes").model_copy(update={"name": "pursuit"})
    assert reduced_work(preset, side_ratio(preset, 256)) > PREVIEW_WORK
    assert preview_ratio(preset, 256) == side_ratio(preset, 256) and thinning(preset, Fraction(1, 4)) == 1


@pytest.mark.parametrize(("name", "side"), [("starburst", 748), ("compass", 512), ("bloom", 512)])
def test_a_preview_of_a_spawn_shape_keeps_its_step_at_a_pixel(name, side):
    """A front that moves less than a pixel a step stalls: a spawn shape's preview keeps its
    largest step at MIN_STEP_PIXELS (starburst's 1.37 -> 1.0005 at 748; bloom's and compass's
    keyframed 0.25 -> 2 -> 1 at 512)."""
    preset = curated(name)
    ratio = preview_ratio(preset, 256)
    assert ratio == Fraction(side, 1024) and step_pixels(preset) * ratio >= MIN_STEP_PIXELS
    assert step_pixels(preset) * Fraction(side - 1, 1024) < MIN_STEP_PIXELS
    reduced, note = reduce_preset(preset, ratio)
    assert f"-> {side}x{side}" in note and "thinned" not in note


def test_a_front_too_costly_at_its_floor_is_thinned_not_shrunk():
    """rings's step of 1 pixel asks for its full 1024: 665e6 of work, so it keeps its canvas and
    a quarter of its agents, each depositing 4 times as much (the trail a pixel receives)."""
    preset = curated("rings")
    ratio = preview_ratio(preset, 256)
    assert ratio == 1 and thinning(preset, ratio) == 4
    assert reduced_work(preset, ratio, 2) > PREVIEW_WORK >= reduced_work(preset, ratio, 4)
    reduced, note = reduce_preset(preset, ratio)
    assert (
        reduced.agents.count == preset.agents.count // 4 and reduced.model.deposit == 4 * preset.model.deposit
    )
    assert reduced.model.sensor_distance == preset.model.sensor_distance
    assert (
        note
        == "preview: 1024x1024 -> 1024x1024, 800,000 -> 200,000 agents (thinned / 4, deposit x 4), distances / 1"
    )
    assert reduce_preset(preset, ratio, "reduce") == (preset, "")  # --reduce 1 leaves it as it is


def test_a_preset_taking_a_thinned_floor_s_name_costs_no_more_than_the_curated_one():
    """A stranger's file named tribes with four times its agents: its floor thinned by 4 would
    cost past THINNED_FLOOR_WORK (the curated tribes's own is within), so its preview follows the
    general rule, 256 and a shortfall note, not its floor whatever it costs."""
    curated_work = reduced_work(curated("tribes"), Fraction(854, 1024), THINNED_FLOORS["tribes"])
    assert curated_work <= THINNED_FLOOR_WORK
    heavy = curated("tribes").model_copy(
        update={"agents": curated("tribes").agents.model_copy(update={"count": 6_400_000})}
    )
    assert reduced_work(heavy, Fraction(854, 1024), THINNED_FLOORS["tribes"]) > THINNED_FLOOR_WORK
    ratio = preview_ratio(heavy, 256)
    assert ratio == side_ratio(heavy, 256) and thinning(heavy, ratio) == 1
    assert "its step 0.3 pixels" in preview_shortfall(heavy, ratio)


@pytest.mark.parametrize("name", sorted(LARGER_WINDOWS))
def test_a_texture_taking_a_larger_window_s_name_costs_no_more_than_the_curated_one(name):
    """A stranger's texture named cells (or labyrinth) with four times its agents: its larger
    window would cost past LARGER_WINDOW_WORK (the curated preset's own is within), so it previews
    in a window of the preview's side, as any texture does, not the larger one whatever it
    costs."""
    preset = curated(name)
    base = side_ratio(preset, 256)
    assert preview_ratio(preset, 256) == base * LARGER_WINDOWS[name]
    assert reduced_work(preset, base * LARGER_WINDOWS[name]) <= LARGER_WINDOW_WORK
    heavy = preset.model_copy(update={"agents": preset.agents.model_copy(update={"count": 8_000_000})})
    assert is_window(heavy, base) and reduced_work(heavy, base * LARGER_WINDOWS[name]) > LARGER_WINDOW_WORK
    assert preview_ratio(heavy, 256) == base
    reduced, note = reduce_preset(heavy, preview_ratio(heavy, 256))
    assert (reduced.canvas.width, reduced.canvas.height) == (256, 256) and note.endswith("(a window)")


def test_a_front_past_the_work_at_any_thinning_keeps_its_floor_thinned_as_it_states():
    """tribes moves a front with one species (its blue ring) of four: its floor (the ring's
    1.2-pixel step at a pixel) asks for 854 pixels, whose four trails cost past PREVIEW_WORK
    however few its agents; it states k = 4 in THINNED_FLOORS, so its preview keeps its floor
    and thins all its species (count / 4, deposit x 4), and says nothing falls short. At 256 its
    ring stood still (steps of 0.3 pixels)."""
    preset = curated("tribes")
    assert moves_a_front(preset) and not is_shaped(preset)
    ratio = preview_ratio(preset, 256)
    assert ratio == Fraction(854, 1024) and ratio >= floor_ratio(preset) > Fraction(853, 1024)
    assert step_pixels(preset) * ratio >= MIN_STEP_PIXELS
    assert thinning(preset, ratio) == THINNED_FLOORS["tribes"] == 4
    assert reduced_work(preset, ratio, MAX_THINNING) > PREVIEW_WORK
    reduced, note = reduce_preset(preset, ratio)
    assert reduced.agents.count == round(preset.agents.count * ratio**2 / 4) == 278_212
    assert all(reduced.species_model(s).deposit == 4 * preset.model.deposit for s in range(4))
    assert note == (
        "preview: 1024x1024 -> 854x854, 1,600,000 -> 278,212 agents (thinned / 4, deposit x 4), "
        "distances / 1.199"
    )
    assert preview_shortfall(preset, ratio) is None
    assert reduce_preset(preset, ratio, "reduce")[0].agents.count == round(preset.agents.count * ratio**2)


def test_a_preview_is_never_enlarged():
    preset = build_preset(tiny_data(canvas={"width": 64, "height": 48}), "t.yaml")
    assert preview_ratio(preset, 256) == 1


@pytest.mark.parametrize("name", ["nebula", "tangle", "cocoon", "coral"])
def test_a_3d_preview_keeps_agents_per_voxel_and_brings_the_frame_within_its_bound(name):
    """A 3D preview (kind 'preview') scales the volume's three sides, keeps the agents per
    voxel, brings the camera's frame to PREVIEW_FRAME_3D on its long side (aspect kept), and
    its note names the volume and the frame; --reduce (kind 'reduce') scales the frame only."""
    preset = curated(name)
    ratio = side_ratio(preset, 48)
    reduced, note = reduce_preset(preset, ratio)
    before, after = preset.canvas, reduced.canvas
    assert min(after.width, after.height) == 48 and after.depth == round(before.depth * ratio)
    voxels = (before.width * before.height * before.depth, after.width * after.height * after.depth)
    assert abs(reduced.agents.count / voxels[1] - preset.agents.count / voxels[0]) < 1e-3
    (width, height), (full_w, full_h) = reduced.frame_size, preset.frame_size
    assert max(width, height) == min(PREVIEW_FRAME_3D, max(full_w, full_h))  # from the full frame
    assert abs(width / height - full_w / full_h) < 0.02
    assert reduced.camera.samples is None  # the reduced volume's diagonal
    assert f"x{after.depth}" in note and f"frame {full_w}x{full_h} -> {width}x{height}" in note
    assert max(reduce_preset(preset, side_ratio(preset, 64))[0].frame_size) == PREVIEW_FRAME_3D
    scaled, _ = reduce_preset(preset, ratio, "reduce")
    assert scaled.frame_size == (round(full_w * ratio), round(full_h * ratio))


def test_a_long_3d_preview_shows_every_kth_frame_of_the_same_steps():
    """cosmos's 625 frames are 625 ray marches: its preview shows every 4th (157 <= 160), over
    the same steps, its crossfade share kept; a count of loop frames and the palette's frame
    counts are divided by the stride; --reduce keeps every frame."""
    preset = curated("cosmos")
    reduced, note = reduce_preset(preset, side_ratio(preset, 48))
    assert reduced.run.steps == preset.run.steps and reduced.run.warmup == preset.run.warmup
    assert reduced.run.steps_per_frame == 4 and reduced.frames == 157 <= PREVIEW_FRAMES_3D
    assert reduced.loop == ("crossfade", 6) and "every 4th frame (625 -> 157)" in note
    counted = preset.model_copy(
        update={
            "output": preset.output.model_copy(update={"loop_frames": 40}),
            "palette": preset.palette.model_copy(update={"every": 30, "blend": 10}),
        }
    )
    strided, _ = reduce_preset(counted, side_ratio(preset, 48))
    assert strided.loop == ("crossfade", 10) and (strided.palette.every, strided.palette.blend) == (7, 2)
    assert reduce_preset(preset, side_ratio(preset, 48), "reduce")[0].frames == 625
    assert reduce_preset(curated("nebula"), side_ratio(curated("nebula"), 48))[0].frames == 80  # within: kept
    longer = curated("nebula").model_copy(
        update={"run": curated("nebula").run.model_copy(update={"steps": 600})}
    )
    assert "every 2nd frame (200 -> 100)" in reduce_preset(longer, side_ratio(longer, 48))[1]


def test_a_preview_the_work_bound_keeps_under_its_floor_says_what_falls_short():
    """tribes under another name (THINNED_FLOORS states nothing for it) stops at 256 (its
    floor, a 1-pixel step for its ring, asks for 854): its step 0.3 pixels and its sensor 3 are
    said on a note line; tribes itself (its floor, thinned) and feast at 384 keep their floors
    and say nothing, nor does a window (cave) or a --reduce."""
    from argparse import Namespace

    from physarum.render.cli.arguments import reduction

    def preview(name: str, rename: str | None = None, **flags) -> str:
        args = Namespace(**{"reduce": None, "preview": True, **flags})
        preset = load_preset(ROOT / "presets" / f"{name}.yaml")
        return reduction(args, preset.model_copy(update={"name": rename}) if rename else preset)[1]

    text = preview("tribes", rename="pursuit")
    assert text.splitlines()[1] == (
        "note: the preview stops at 256x256, within a few seconds of a CPU's work, with its smallest "
        "sensor 3 pixels (6 kept), its step 0.3 pixels (1 kept: a front under it stalls): its structure "
        'may be finer than the full render\'s (docs/presets.md, "Previews"); --reduce K renders it larger'
    )
    assert "its smallest sensor 4.2 pixels (6 kept)" in preview("rivals") and "step" not in preview("rivals")
    for name in ("tribes", "feast", "cave", "quickstart"):
        assert "\n" not in preview(name), name
    assert "\n" not in preview("tribes", reduce=4, preview=False)
