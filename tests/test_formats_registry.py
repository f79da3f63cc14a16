"""The format registry: every list of formats is the registry's, each format round-trips the
text it carries, and each format's limits are refused before a render starts."""

from __future__ import annotations

import pytest
import yaml

from physarum.render.base.errors import RenderError
from physarum.render.formats import registry
from physarum.render.formats.contract import Format
from physarum.render.formats.mov import MOV_MAX_SIDE
from physarum.render.formats.mp4 import MP4_MAX_SIDE
from physarum.render.formats.webp import WEBP_MAX_SIDE
from physarum.render.out.specs import check_outputs
from physarum.render.preset import ALL_FORMATS, FORMATS, build_preset
from physarum.render.preset.provenance import embedded_text
from physarum.render.run.runner import render
from support import problems_of, tiny_data


def test_the_registry_finds_each_format_module_in_position_order():
    assert list(registry.FORMATS) == ["gif", "mp4", "webp", "png", "mov", "webm", "apng"]
    positions = [fmt.position for fmt in registry.FORMATS.values()]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    for name, fmt in registry.FORMATS.items():
        assert isinstance(fmt, Format) and fmt.spec.format == name


def test_the_preset_schema_lists_the_registrys_formats():
    assert ALL_FORMATS == tuple(registry.FORMATS)
    assert FORMATS == tuple(name for name, fmt in registry.FORMATS.items() if fmt.default)
    assert build_preset(tiny_data(), "t.yaml").output.formats == list(FORMATS)
    problems = problems_of(tiny_data(output={"formats": ["avi"]}))
    assert len(problems) == 1 and "avi" in problems[0]
    assert all(f"'{name}'" in problems[0] for name in ALL_FORMATS)


@pytest.mark.parametrize("name", list(registry.FORMATS))
def test_each_format_carries_its_preset_and_reads_it_back(tmp_path, name):
    preset = build_preset(tiny_data(output={"formats": [name]}), "t.yaml")
    result = render(preset, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    path = result.outputs[name]
    assert path.suffix == f".{name}" and path.stat().st_size > 0
    assert registry.read_embedded(path) == embedded_text(preset)
    assert yaml.safe_load(registry.read_embedded(result.outputs["json"]))["name"] == "tiny"


def test_a_file_of_no_formats_suffix_is_read_as_a_png(tmp_path):
    preset = build_preset(tiny_data(output={"formats": ["png"]}), "t.yaml")
    still = render(preset, backend="torch", device="cpu", out_dir=tmp_path, quiet=True).outputs["png"]
    renamed = still.rename(still.with_suffix(".image"))
    assert registry.read_embedded(renamed) == embedded_text(preset)


@pytest.mark.parametrize(
    ("name", "side", "words"),
    [
        ("webp", WEBP_MAX_SIDE, "WebP"),
        ("mp4", MP4_MAX_SIDE, "MP4"),
        ("mov", MOV_MAX_SIDE, "ProRes"),  # webm's and apng's limits are the canvas's own bound
    ],
)
def test_a_side_over_a_formats_limit_is_refused_before_the_render(name, side, words):
    within = build_preset(
        tiny_data(canvas={"width": side, "height": 16}, output={"formats": [name]}), "t.yaml"
    )
    assert check_outputs(within) == []
    over = build_preset(
        tiny_data(canvas={"width": side + 1, "height": 16}, output={"formats": [name]}), "t.yaml"
    )
    with pytest.raises(RenderError, match=f"{words}.* at most {side} pixels per side"):
        check_outputs(over)


def test_a_sidecar_nested_past_the_json_bound_is_refused_naming_it(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nests 100000 levels deep"):
        registry.read_embedded(deep)
