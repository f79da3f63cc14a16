"""Render layers (render/look/layers.py): density counts, heading bins, the hue wheel, the preset key,
and the same bytes on the torch and Triton backends."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import yaml

from physarum.kernels.api import FRAC_BITS, HEADINGS
from physarum.render.cli.main import main
from physarum.render.look.colour import Colourist, MixColourist
from physarum.render.look.layers import (
    HEADING_BINS,
    QUADRANT_BINS,
    density_counts,
    heading_bins,
    heading_sums,
    hue_table,
    layer_map,
    mix_weight,
    sector_bounds,
    sector_count,
    unit_vectors,
)
from physarum.render.preset import build_preset
from physarum.render.preset.provenance import embedded_text
from physarum.render.run import runner
from support import gif_png_and_loop_on_each_backend, problems_of, tiny_data


def agents_at(cells: list[tuple[int, int]], headings: list[int]):
    """position [2, N] int32 16.16 in the middle of the given (x, y) cells, heading [N] int16."""
    xy = torch.tensor(cells, dtype=torch.int32).T
    position = (xy << FRAC_BITS) + (1 << (FRAC_BITS - 1))
    return position, torch.tensor(headings, dtype=torch.int16)


def bin_of(heading: int, agents: int = 1) -> int:
    position, headings = agents_at([(0, 0)] * agents, [heading] * agents)
    sums = heading_sums(position, headings, 1, 1)
    return int(heading_bins(sums[0], sums[1])[0, 0])


def test_density_counts_equal_numpy_bincount():
    rng = np.random.default_rng(7)
    height, width, n = 5, 7, 400
    position = torch.from_numpy(
        np.stack([rng.integers(0, width << FRAC_BITS, n), rng.integers(0, height << FRAC_BITS, n)]).astype(
            np.int32
        )
    )
    cells = (position[1] >> FRAC_BITS).numpy().astype(np.int64) * width + (position[0] >> FRAC_BITS).numpy()
    expected = np.bincount(cells, minlength=height * width).reshape(height, width)
    assert np.array_equal(density_counts(position, height, width).numpy(), expected)


def test_agents_facing_east_show_the_first_bin_and_each_quarter_turn_adds_a_quadrant():
    assert bin_of(0, agents=3) == 1
    for quarter in range(4):
        assert bin_of(quarter * HEADINGS // 4) == 1 + quarter * QUADRANT_BINS


def test_bins_rise_anticlockwise_around_the_circle():
    bins = [bin_of(h) for h in range(0, HEADINGS, 8)]
    assert bins == sorted(bins) and bins[0] == 1 and bins[-1] == HEADING_BINS
    assert len(set(bins)) == HEADING_BINS  # every sector is reached


def test_the_binary_search_counts_every_bound_behind_the_vector():
    generator = torch.Generator().manual_seed(5)
    rx = torch.randint(1, 1 << 44, (4000,), generator=generator, dtype=torch.int64)
    ry = torch.randint(0, 1 << 44, (4000,), generator=generator, dtype=torch.int64)
    bounds = torch.from_numpy(sector_bounds())
    rx = torch.cat([rx, bounds[:, 0], bounds[:, 0] + 1])  # on each bound and just past it
    ry = torch.cat([ry, bounds[:, 1], bounds[:, 1]])
    counted = sum((int(bx) * ry - int(by) * rx >= 0).to(torch.int64) for bx, by in bounds)
    assert torch.equal(sector_count(rx, ry), counted)


def test_opposite_headings_cancel_to_black_and_empty_cells_are_black():
    position, headings = agents_at([(1, 0), (1, 0), (0, 1)], [100, 100 + HEADINGS // 2, 300])
    sums = heading_sums(position, headings, 2, 2)
    index = heading_bins(sums[0], sums[1])
    assert sums[:, 0, 1].tolist() == [0, 0]  # the unit circle is exactly symmetric
    assert index[0, 1] == 0 and index[0, 0] == 0 and index[1, 1] == 0
    assert index[1, 0] == bin_of(300)
    assert hue_table()[0].tolist() == [0, 0, 0]


def test_unit_vectors_are_exactly_symmetric():
    vectors = unit_vectors()
    half = np.roll(vectors, -HEADINGS // 2, axis=0)
    assert np.array_equal(vectors, -half)


def test_hue_table_is_a_wheel_of_distinct_bright_colours():
    table = hue_table().astype(int)
    wheel = table[1 : 1 + HEADING_BINS]
    assert len({tuple(c) for c in wheel}) == HEADING_BINS
    assert (wheel.max(axis=1) == 255).all() and (wheel.min(axis=1) == 0).all()
    assert (table[1 + HEADING_BINS :] == 0).all()


def test_the_default_layer_is_not_embedded_and_a_layer_is():
    assert "layer" not in embedded_text(build_preset(tiny_data(), "tiny.yaml"))
    data = tiny_data(palette={"layer": "density"})
    again = build_preset(yaml.safe_load(embedded_text(build_preset(data, "t.yaml"))), "again.yaml")
    assert again.palette.layer == "density"


def test_layer_map_of_density_counts_the_states_agents():
    preset = build_preset(tiny_data(palette={"layer": "density"}), "tiny.yaml")
    from physarum.render.sim.simulation import make_simulation

    state = make_simulation(preset, "torch", torch.device("cpu")).state
    counts = layer_map(preset, state.trail, (state.position, state.heading), 0)
    assert counts.dtype == torch.float32 and int(counts.sum()) == preset.agents.count


@pytest.mark.parametrize(("share", "weight"), [(None, 128), (0.0, 0), (1.0, 256), (0.25, 64)])
def test_a_mix_blends_the_trail_and_density_indices_in_integers(share, weight):
    data = tiny_data(palette={"layer": "mix", "layer_mix": share} if share is not None else {"layer": "mix"})
    palette = build_preset(data, "tiny.yaml").palette
    assert mix_weight(palette) == weight
    maps = (
        torch.rand((2, 6, 5), generator=torch.Generator().manual_seed(3))
        * torch.tensor([1.0, 9.0])[:, None, None]
    )
    plain = Colourist(palette)
    parts = [plain.index_frame(maps[i]).to(torch.int32) for i in range(2)]
    expected = (parts[0] * (256 - weight) + parts[1] * weight + 128) >> 8
    assert torch.equal(MixColourist(palette).index_frame(maps), expected.to(torch.uint8))


def test_layer_mix_is_only_for_a_mix():
    problems = problems_of(tiny_data(palette={"layer": "density", "layer_mix": 0.3}))
    assert any("palette.layer_mix: only used with palette.layer: mix" in p for p in problems)


def test_layers_refuse_species_and_heading_refuses_a_crossfade():
    two = [{"name": "a", "colour": "#ff4030"}, {"name": "b", "colour": "#30a0ff"}]
    species = problems_of(tiny_data(species=two, palette={"layer": "heading"}))
    assert len(species) == 1 and "palette.layer: a species preset" in species[0]
    fade = problems_of(tiny_data(palette={"layer": "heading"}, output={"loop_mode": "crossfade"}))
    assert any("palette.layer: heading frames" in p for p in fade)


def test_a_bad_layer_exits_2_with_one_message(tmp_path, capsys):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_data(palette={"layer": "speed"})))
    out = tmp_path / "out"
    assert main(["render", str(path), "--out", str(out), "--quiet", "--backend", "torch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "palette.layer" in err and "'speed'" in err
    assert "Traceback" not in err and (not out.exists() or not any(out.rglob("*")))


@pytest.mark.interpreter
@pytest.mark.parametrize(
    ("layer", "loop"), [("density", "ping-pong"), ("heading", "closest"), ("mix", "crossfade")]
)
def test_layers_are_byte_identical_on_torch_and_triton(layer, loop, tmp_path):
    data = tiny_data(
        canvas={"width": 24, "height": 16},
        agents={"count": 160},
        run={"steps": 12, "steps_per_frame": 2},
        palette={"layer": layer},
        output={"formats": ["gif", "png"], "loop_mode": loop},
    )
    files = gif_png_and_loop_on_each_backend(build_preset(data, "tiny.yaml"), tmp_path)
    assert files["torch"] == files["triton"]
    plain = build_preset(tiny_data(**{k: v for k, v in data.items() if k != "palette"}), "tiny.yaml")
    trail = runner.render(plain, backend="torch", device="cpu", out_dir=tmp_path / "trail", quiet=True)
    assert trail.outputs["png"].read_bytes() != files["torch"]["png"]  # the layer shows something else


@pytest.mark.interpreter
def test_the_lanes_agents_give_the_states_layers():
    """Triton's agents as its lanes hold them (sorted by cell at the first step) give the same
    density and heading maps as its state (agents put back in spawn order)."""
    from physarum.render.sim.simulation import make_simulation

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for layer in ("density", "heading"):
        preset = build_preset(tiny_data(palette={"layer": layer}), "tiny.yaml")
        simulation = make_simulation(preset, "triton", device)
        simulation.advance(3)
        state = simulation.state
        lanes = simulation.agents
        assert not torch.equal(lanes[1], state.heading)  # the lanes are in another order
        expected = layer_map(preset, state.trail, (state.position, state.heading), 0)
        assert torch.equal(layer_map(preset, simulation.trail, lanes, 0), expected), layer
