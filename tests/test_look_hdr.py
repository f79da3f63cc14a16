"""render/look/hdr.py: the exact HDR look against a naive per-pixel integer reference (Python
ints and numpy float32 scalars, one pixel at a time), its tables, its scaling with the canvas, its
grain's seed, and look presets rendering the same bytes twice and on each backend."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from physarum.kernels.exact import lowbias32_int
from physarum.render.look import hdr
from physarum.render.look.colour import make_colourist
from physarum.render.preset.look_section import Look
from physarum.render.run import runner
from physarum.render.sim.keyframes import KeyframedSimulation
from physarum.render.sim.simulation import make_simulation
from support import build_preset, render_tiny, tiny_data

# ---------------------------------------------------------------------------------------------
# The naive reference: lists of lists of Python ints, one pixel at a time


def naive_blur(x):
    rows, cols = len(x), len(x[0])
    for _ in range(2):
        x = [
            [(x[i][max(j - 1, 0)] + 2 * x[i][j] + x[i][min(j + 1, cols - 1)] + 2) // 4 for j in range(cols)]
            for i in range(rows)
        ]
    for _ in range(2):
        x = [
            [(x[max(i - 1, 0)][j] + 2 * x[i][j] + x[min(i + 1, rows - 1)][j] + 2) // 4 for j in range(cols)]
            for i in range(rows)
        ]
    return x


def naive_down(x):
    return [
        [
            (x[2 * i][2 * j] + x[2 * i + 1][2 * j] + x[2 * i][2 * j + 1] + x[2 * i + 1][2 * j + 1] + 2) // 4
            for j in range(len(x[0]) // 2)
        ]
        for i in range(len(x) // 2)
    ]


def naive_up_row(row, size):
    n, out = len(row), []
    for i in range(n):
        left, right = row[max(i - 1, 0)], row[min(i + 1, n - 1)]
        out += [(3 * row[i] + left + 2) // 4, (3 * row[i] + right + 2) // 4] if n > 1 else [row[i], row[i]]
    return out + [out[-1]] * (size - len(out))


def naive_up(x, shape):
    wide = [naive_up_row(row, shape[1]) for row in x]
    columns = [naive_up_row([r[j] for r in wide], shape[0]) for j in range(shape[1])]
    return [[columns[j][i] for j in range(shape[1])] for i in range(shape[0])]


def naive_bloom(level, threshold, n, strength):
    pyramid = [[[max(v - threshold, 0) * 16 for v in row] for row in level]]
    for _ in range(n):
        pyramid.append(naive_down(pyramid[-1]))
    octaves = min(hdr.OCTAVES, n)
    glow = naive_blur(pyramid[n])
    for k in range(n - 1, n - octaves, -1):
        up = naive_up(glow, (len(pyramid[k]), len(pyramid[k][0])))
        glow = naive_blur([[a + b for a, b in zip(r, s)] for r, s in zip(up, pyramid[k])])
    for k in range(n - octaves, -1, -1):
        glow = naive_up(glow, (len(pyramid[k]), len(pyramid[k][0])))
    return [[v * strength // (256 * octaves * 16) for v in row] for row in glow]


def naive_bayer(r, c):
    """The 8x8 Bayer value by digits: the top quadrant is the lowest base-4 digit."""
    base = lambda rb, cb: (2 * cb) ^ (3 * rb)  # noqa: E731  [[0, 2], [3, 1]]
    return sum(base((r >> (2 - k)) & 1, (c >> (2 - k)) & 1) * 4**k for k in range(3))


def naive_index(look: Look, trail: np.ndarray, low: float, high: float, gamma: float, seed: int, frame: int):
    """[H, W] palette indices of the look, pixel by pixel."""
    rows, cols = trail.shape
    table = hdr.tone_table(look.curve, gamma)
    exposure = np.float32(hdr.float32_nearest(Fraction(4096) * Fraction(look.exposure)))
    scale = min(exposure / (np.float32(high) - np.float32(low)), np.float32(2.0**100))
    level = [
        [int(min(max(math.floor((np.float32(t) - np.float32(low)) * scale), 0), 65535)) for t in row]
        for row in trail
    ]
    if look.bloom:
        n = hdr.bloom_levels(cols, rows, look.bloom_radius)
        glow = naive_bloom(level, round(look.bloom_threshold * 4096), n, round(look.bloom * 256))
        level = [[min(a + b, 65535) for a, b in zip(r, s)] for r, s in zip(level, glow)]
    amount, grain = round(look.vignette * 4096), round(look.grain * 65535)
    seed_key = lowbias32_int(seed ^ 0x9E3779B9)
    out = np.zeros((rows, cols), dtype=np.uint8)
    for i in range(rows):
        for j in range(cols):
            value = level[i][j]
            if amount:
                r2 = (2 * j + 1 - cols) ** 2 + (2 * i + 1 - rows) ** 2
                f = r2 * 4096 // max(1, (cols - 1) ** 2 + (rows - 1) ** 2)
                value = value * (4096 - amount * (f * f // 4096) // 4096) // 4096
            display = int(table[value])
            if grain:  # the canvas's grain, rolled by the frame's shift
                shift = lowbias32_int((frame + seed_key) & 0xFFFFFFFF)
                y, x = (i - shift % rows) % rows, (j - (shift >> 16) % cols) % cols
                h = lowbias32_int(lowbias32_int((y * cols + x) ^ seed_key))
                noise = (h & 0xFFF) + ((h >> 12) & 0xFFF) - 4095
                display = min(max(display + (noise * grain) // 4096, 0), 65535)
            offset = (2 * naive_bayer(i % 8, j % 8) + 1) * 65535 // 128 if look.dither else 32767
            out[i, j] = (display * 255 + offset) // 65535
    return out


LOOKS = [
    Look(curve="linear", dither=False),
    Look(curve="aces", bloom=2.0, bloom_radius=0.2, bloom_threshold=0.3, vignette=0.6),
    Look(curve="log", exposure=3.0, grain=0.1),
    Look(curve="agx", bloom=1.0, bloom_radius=0.5, grain=0.05, vignette=1.0, exposure=0.5),
    Look(curve="reinhard", bloom=8.0, bloom_threshold=0.0, bloom_radius=0.05),
]


@pytest.mark.parametrize("look", LOOKS, ids=lambda look: look.curve)
@pytest.mark.parametrize("shape", [(13, 22), (16, 16)])
def test_the_device_look_is_the_naive_per_pixel_one(look, shape):
    generator = torch.Generator().manual_seed(5)
    trail = (torch.rand(shape, generator=generator) ** 4 * 9).to(torch.float32)
    trail[2, 3], trail[-1, -1] = 40.0, 0.0  # a highlight far beyond white, and black
    low, high = 0.25, 3.5
    got = hdr.HdrLook(look, 0.8, seed=9).index(trail, torch.tensor(low), torch.tensor(high), frame=4)
    expected = naive_index(look, trail.numpy(), low, high, 0.8, 9, 4)
    assert np.array_equal(got.numpy(), expected)


def test_bayer_is_the_digit_formula_and_a_permutation():
    matrix = hdr.bayer()
    assert sorted(matrix.ravel().tolist()) == list(range(64))
    assert all(matrix[r, c] == naive_bayer(r, c) for r in range(8) for c in range(8))


def test_the_series_match_libm_closely_and_the_tables_rise():
    x = np.array([1e-9, 0.03, 0.5, 1.0, 1.7, 3.0, 1025.0, 1e12])
    assert np.allclose(hdr.ln(x), np.log(x), rtol=1e-14, atol=1e-15)
    z = np.array([-30.0, -1.0, -0.2, 0.0, 0.3, 2.0, 40.0])
    assert np.allclose(hdr.exp(z), np.exp(z), rtol=1e-14)
    for curve in ("linear", "log", "reinhard", "aces", "agx"):
        table = hdr.tone_table(curve, 1.0)
        assert table[0] == 0 and table[-1] >= 65000 and np.all(np.diff(table) >= 0), curve
    assert hdr.tone_table("linear", 1.0)[4096] == 65535  # linear clips at the white level
    assert hdr.tone_table("aces", 0.5)[1000] > hdr.tone_table("aces", 1.0)[1000]  # gamma < 1 brightens


def test_bloom_reaches_the_same_share_of_any_canvas():
    assert hdr.bloom_levels(1024, 1024, 0.03) == hdr.bloom_levels(512, 512, 0.03) + 1
    assert hdr.bloom_levels(3840, 2160, 0.05) == hdr.bloom_levels(1920, 1080, 0.05) + 1
    assert hdr.bloom_levels(4, 4, 0.5) == 1

    def reach(side):  # the glow of a centred square of side / 8: its half-height width / side
        level = torch.zeros(side, side, dtype=torch.int32)
        level[
            side // 2 - side // 16 : side // 2 + side // 16, side // 2 - side // 16 : side // 2 + side // 16
        ] = 65535
        glow = hdr.bloom(level, 0, hdr.bloom_levels(side, side, 0.1), 256)[side // 2]
        return int((glow > glow.max() // 2).sum()) / side

    assert reach(64) == pytest.approx(reach(128), abs=0.04)


def test_the_seed_and_the_frame_change_the_grain_and_nothing_else_does():
    trail = torch.rand(24, 40, generator=torch.Generator().manual_seed(2))
    low, high = torch.tensor(0.0), torch.tensor(1.0)

    def index(look, seed, frame):
        return hdr.HdrLook(look, 1.0, seed).index(trail, low, high, frame)

    grainy = Look(grain=0.1)
    assert torch.equal(index(grainy, 1, 0), index(grainy, 1, 0))
    assert not torch.equal(index(grainy, 1, 0), index(grainy, 2, 0))
    assert not torch.equal(index(grainy, 1, 0), index(grainy, 1, 1))
    assert torch.equal(index(Look(), 1, 0), index(Look(), 2, 5))


def test_a_preset_without_a_look_colours_as_before_and_one_with_it_differs():
    plain = build_preset(tiny_data(), "tiny.yaml")
    assert plain.look is None and "look" not in plain.model_dump()
    looked = build_preset(tiny_data(look={"bloom": 1.0}), "tiny.yaml")
    assert make_colourist(plain).hdr is None and make_colourist(looked).hdr is not None
    trail = torch.rand(32, 48, generator=torch.Generator().manual_seed(1)) * 3
    assert not torch.equal(
        make_colourist(plain).index_frame(trail), make_colourist(looked).index_frame(trail)
    )


LOOK_SECTION = {
    "curve": "aces",
    "bloom": 2.0,
    "bloom_radius": 0.1,
    "vignette": 0.5,
    "grain": 0.05,
    "black": 0.2,
}


def test_a_look_preset_renders_the_same_bytes_twice(tmp_path):
    first = render_tiny(tmp_path / "a", look=LOOK_SECTION, output={"formats": ["gif", "png"]})
    second = render_tiny(tmp_path / "b", look=LOOK_SECTION, output={"formats": ["gif", "png"]})
    flat = render_tiny(tmp_path / "c", output={"formats": ["gif", "png"]})
    for fmt in ("gif", "png"):
        assert first.outputs[fmt].read_bytes() == second.outputs[fmt].read_bytes()
    assert first.outputs["png"].read_bytes() != flat.outputs["png"].read_bytes()


@pytest.mark.interpreter
@pytest.mark.slow
def test_a_look_preset_is_the_same_bytes_on_each_backend(tmp_path):
    preset = build_preset(tiny_data(look=LOOK_SECTION, output={"formats": ["gif", "png"]}), "tiny.yaml")
    found = {}
    for backend in ("torch", "triton"):
        device = "cuda" if backend == "triton" and torch.cuda.is_available() else "cpu"
        result = runner.render(preset, backend=backend, device=device, out_dir=tmp_path / backend, quiet=True)
        found[backend] = [result.outputs[fmt].read_bytes() for fmt in ("gif", "png")]
    assert found["torch"] == found["triton"]


@pytest.mark.gpu
@pytest.mark.parametrize("look", LOOKS, ids=lambda look: look.curve)
def test_cpu_and_cuda_give_the_same_index_frames(look):
    generator = torch.Generator().manual_seed(11)
    trail = torch.rand(2, 517, 389, generator=generator) ** 3 * 20  # a batch, odd sides
    low, high = torch.tensor(0.1), torch.tensor(6.0)
    cpu = hdr.HdrLook(look, 0.7, 3).index(trail, low, high, 17)
    cuda = hdr.HdrLook(look, 0.7, 3).index(trail.cuda(), low.cuda(), high.cuda(), 17)
    assert torch.equal(cpu, cuda.cpu())


def test_a_level_range_of_one_ulp_stays_finite():
    """exposure / (high - low) overflows float32 here; bounded at 2^100 it never makes 0 * inf."""
    low = torch.tensor(2.0**-100)
    high = torch.nextafter(low, torch.tensor(1.0))
    trail = torch.tensor([[0.0, 2.0**-100, float(high), 1.0]])
    level = hdr.HdrLook(Look(), 1.0, 0).linear(trail, low, high)
    assert level.tolist() == [[0, 0, 0, 65535]]


def test_scheduled_look_values_follow_each_frames_step_and_leave_the_simulation_alone():
    ramp = {"keys": {0: 0.5, "100%": 4.0}}
    preset = build_preset(
        tiny_data(look={"exposure": ramp, "vignette": {"keys": {0: 0, 24: 1}}}), "tiny.yaml"
    )
    assert [path for path, _ in preset.schedules] == ["look.exposure", "look.vignette"]
    assert preset.simulation_schedules == []
    colourist = make_colourist(preset)
    first, last = colourist.hdr.values(0), colourist.hdr.values(preset.frames - 1)
    assert first.exposure == 4096 * (0.5 + 3.5 * 3 / 24) and first.vignette == round(4096 * 3 / 24)
    assert last.exposure == 4096 * 4.0 and last.vignette == 4096
    trail = torch.rand(32, 48, generator=torch.Generator().manual_seed(4))
    assert not torch.equal(colourist.index_frame(trail, 0), colourist.index_frame(trail, 7))
    fixed = make_colourist(build_preset(tiny_data(look={"exposure": 2.0}), "tiny.yaml"))
    assert torch.equal(fixed.index_frame(trail, 0), fixed.index_frame(trail, 7))


def test_a_preset_whose_only_schedules_are_the_looks_simulates_without_keyframes():
    preset = build_preset(tiny_data(look={"bloom": {"keys": {0: 0, "100%": 2}}}), "tiny.yaml")
    assert not isinstance(make_simulation(preset, "torch", torch.device("cpu")), KeyframedSimulation)
    model = tiny_data(
        look={"bloom": {"keys": {0: 0, "100%": 2}}}, model={"decay": {"keys": {0: 0.1, 24: 0.2}}}
    )
    assert isinstance(
        make_simulation(build_preset(model, "tiny.yaml"), "torch", torch.device("cpu")), KeyframedSimulation
    )


@pytest.mark.parametrize(
    "extra",
    [
        {"palette": {"layer": "density"}},
        {"output": {"loop_mode": "crossfade"}},
        {"output": {"loop_mode": "closest"}},
        {"output": {"loop_mode": "ping-pong"}},
        {"palette": {"blend": 2}},
    ],
    ids=["density", "crossfade", "closest", "ping-pong", "blend"],
)
def test_a_scheduled_look_renders_with_each_loop_layer_and_blend(extra, tmp_path):
    look = {"bloom": 1.0, "grain": 0.05, "vignette": 0.3, "exposure": {"keys": {0: 1, "100%": 2}}}
    result = render_tiny(tmp_path, look=look, **extra)
    assert all(path.stat().st_size > 0 for path in result.outputs.values())
    assert "look.exposure" in json.loads(result.outputs["json"].read_text())["schedules"]


def test_a_batch_of_maps_is_each_map_coloured_alone():
    trail = torch.rand(2, 57, 39, generator=torch.Generator().manual_seed(11)) ** 3 * 20
    low, high = torch.tensor(0.1), torch.tensor(6.0)
    for look in LOOKS:
        look_of = hdr.HdrLook(look, 0.7, 3)
        batch = look_of.index(trail, low, high, 17)
        assert all(torch.equal(batch[i], look_of.index(trail[i], low, high, 17)) for i in range(2)), look
