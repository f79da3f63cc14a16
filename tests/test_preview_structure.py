"""Previews keep the look: a curated preset's preview (render --preview) against its full render,
on statistics of the trail's structure (scripts/preview_figure.py: structure), within BOUNDS.

The full renders' numbers are tests/golden/preview-structure.json, measured on the 2-core CPU
with `python scripts/preview_figure.py stats OUT.json NAME ... --full` (torch); the previews'
are measured here the same way. The rules that make a preview keep the look are checked for
every curated preset without simulating (fast); the measured comparison simulates the previews
of the presets whose look is a moving front (slow)."""

from __future__ import annotations

import importlib.util
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from physarum.render.preset import load_preset
from physarum.render.preset.catalog import preset_files
from physarum.render.preset.reduce import (
    MIN_SENSOR_PIXELS,
    MIN_STEP_PIXELS,
    PREVIEW_WORK,
    SHAPED_SPAWNS,
    is_shaped,
    is_window,
    ray_samples,
    reduced_work,
    scaled,
    sensor_pixels,
    step_pixels,
    thinning,
)

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests" / "golden" / "preview-structure.json"
FRONTS = ("rings", "starburst", "bloom", "compass")  # a spawn shape whose front moves
TEXTURES = ("veins", "anywhere")  # scaled textures (veins-glow has veins's model: the same trail)
# Known gaps, held here (strict) until they are closed: scaled textures whose sensors fall to 4.5
# pixels at 256 come out finer than their full renders. cave: wavelength 0.068 against 0.091 at
# the end, lit 0.214 against 0.133 (at 342 0.089 and 0.195; at 512, `--reduce 2`, 0.091 and 0.150,
# twice PREVIEW_WORK); quickstart: wavelength 0.101 against 0.144 at the end (0.111 against 0.114
# at half the run: its full render coarsens in its second half, the preview does not)
GAPS = tuple(
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason="finer at 256: a known gap"))
    for name in ("cave", "quickstart")
)
# The bounds: r50 and reach (shares of the short side) within RADIUS of the full render's, the
# lit share within a factor LIT, the dominant wavelength at the end within a factor WAVELENGTH.
# r90 is measured, not bounded: bloom's full render ends with a tenth of its trail in one petal
# (r90 0.290), which neither its full canvas with a quarter of the agents (0.119) nor 768 pixels
# (0.122) repeat: a seed's chance, not the reduction. reach moves as much (0.485 to 0.558).
RADIUS = 0.05
LIT = Fraction(4, 3)
WAVELENGTH = 1.15


def load_script():
    """scripts/preview_figure.py as a module (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location("preview_figure", ROOT / "scripts" / "preview_figure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def curated():
    return [(path.stem, load_preset(path)) for path in preset_files()]


def within(full: dict, preview: dict) -> list[str]:
    """What of a preview's structure at one point of the run is out of BOUNDS of the full's."""
    out = []
    for key in ("r50", "reach"):
        if not abs(preview[key] - full[key]) <= RADIUS:
            out.append(f"{key} {preview[key]:.3f} against {full[key]:.3f}")
    if not 1 / LIT <= preview["lit"] / full["lit"] <= LIT:
        out.append(f"lit {preview['lit']:.4f} against {full['lit']:.4f}")
    return out


@pytest.mark.parametrize(("name", "preset"), curated(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_preview_keeps_its_sensors_and_fronts_resolved(name, preset):
    """No simulation: a curated preset's preview is a window (its distances kept) or keeps its
    smallest sensor at MIN_SENSOR_PIXELS and, with a spawn shape, its step at MIN_STEP_PIXELS,
    unless it is already at its full size or the work bound stopped it (then its note says so
    by its size); a thinned preview keeps the trail a pixel receives (count / k, deposit x k)."""
    figure = load_script()
    reduced = figure.preview_of(preset)
    if reduced is preset:
        return
    short = min(preset.canvas.width, preset.canvas.height)
    ratio = Fraction(min(reduced.canvas.width, reduced.canvas.height), short)
    if "a window" in reduced.description:
        assert reduced.model == preset.model and is_window(preset, ratio)
        return
    shaped = any(preset.species_agents(s).spawn in SHAPED_SPAWNS for s in range(preset.species_count))
    floors = sensor_pixels(preset) * ratio >= MIN_SENSOR_PIXELS - Fraction(1, 100)
    if shaped:
        floors = floors and step_pixels(preset) * ratio >= MIN_STEP_PIXELS - Fraction(1, 100)
    k = thinning(preset, ratio)
    if preset.dims == 2:
        next_side = Fraction(min(reduced.canvas.width, reduced.canvas.height) + 1, short)
        assert (
            floors
            or ratio == Fraction(256, short)
            or reduced_work(preset, next_side, thinning(preset, next_side)) > PREVIEW_WORK
        )
    if k > 1:
        assert is_shaped(preset) and f"thinned / {k}, deposit x {k}" in reduced.description
        dump = reduced.model.model_dump()["deposit"]
        assert dump == scaled(preset.model.model_dump()["deposit"], Fraction(k))  # a number, keys or a range


@pytest.mark.parametrize("name", ["nebula", "tangle", "cocoon", "coral", "cosmos"])
def test_a_3d_preview_keeps_the_opacity_of_a_ray_across_its_volume(name):
    """Fewer samples a ray in a smaller volume: each sample's opacity a' such that
    (1 - a')^n' = (1 - a)^n, so a ray crossing the whole volume is as opaque as in the full
    render (cosmos's 0.05 over 887 samples showed a nearly black frame at 83)."""
    figure = load_script()
    preset = load_preset(ROOT / "presets" / f"{name}.yaml")
    reduced = figure.preview_of(preset)
    sides = lambda p: (p.canvas.width, p.canvas.height, p.canvas.depth)  # noqa: E731
    full = ray_samples(preset.camera.model_dump(), sides(preset))
    fewer = ray_samples(reduced.camera.model_dump(), sides(reduced))
    assert fewer < full
    kept = (1 - reduced.camera.opacity) ** fewer
    assert math.isclose(kept, (1 - preset.camera.opacity) ** full, rel_tol=1e-9, abs_tol=1e-12)
    assert "opacity" in reduced.description


def test_cosmos_previews_scaled_with_the_opacity_of_its_full_rays():
    """cosmos (nebula's model in 512^3) at 48 voxels: scaled, not a window (a 48^3 window of its
    model condensed into two tubes), its opacity 0.05 over 887 samples a ray raised to 0.418
    over 83 (its frame's mean level 4.4 of 255 before, the full render's 57)."""
    figure = load_script()
    preset = load_preset(ROOT / "presets" / "cosmos.yaml")
    reduced = figure.preview_of(preset)
    assert "distances / " in reduced.description and "opacity 0.05 -> 0.418" in reduced.description


@pytest.mark.slow
@pytest.mark.parametrize("name", FRONTS + TEXTURES + GAPS)
def test_a_preview_is_within_bounds_of_its_full_render(name):
    """The moving fronts (rings: a ring that marches inwards and buckles; starburst: a disc of
    rays; bloom and compass: a burst) and a scaled texture (veins) against their full renders at
    25%, 50% and 100% of the run: radii within RADIUS, the lit share within a factor LIT, the
    wavelength at the end within WAVELENGTH. Before the step floor rings' ring stood still (r50
    0.446 against 0.282, lit 0.020 against 0.054) and starburst lit 0.025 of its canvas against
    0.120; veins's preview was and is within them (lit 0.211 against 0.164 at the end)."""
    figure = load_script()
    full = json.loads(REFERENCE.read_text())["presets"][name]
    preset = figure.preview_of(load_preset(ROOT / "presets" / f"{name}.yaml"))
    measured = figure.measure(preset)["at"]
    problems = [f"{at}: {p}" for at in full["at"] for p in within(full["at"][at], measured[at])]
    end_full, end = full["at"]["1.0"]["wavelength"], measured["1.0"]["wavelength"]
    if not 1 / WAVELENGTH <= end / end_full <= WAVELENGTH:
        problems.append(f"wavelength {end:.3f} against {end_full:.3f}")
    assert not problems, f"{name}: " + "; ".join(problems)
