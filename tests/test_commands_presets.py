"""A preset changed by settings (render/commands/presets.py, physarum.change) keeps every section
it has: checkpoint, output.fields and output.volume, which a preset's dump leaves out."""

from __future__ import annotations

import physarum
from physarum.render.commands.presets import change, full_dump
from physarum.render.preset import build_preset
from support import TINY, tiny_3d, tiny_data


def test_change_keeps_checkpoints_and_raw_fields():
    preset = build_preset(
        tiny_data(checkpoint={"every": 12}, output={**TINY["output"], "fields": {"at": [12]}}), "t.yaml"
    )
    darker = physarum.change(preset, {"model.decay": 0.2})
    assert darker.model.decay == 0.2
    assert darker.checkpoint == preset.checkpoint and darker.checkpoint.every == 12
    assert darker.output.fields == preset.output.fields and darker.output.fields.at == [12]
    assert darker.model_copy(update={"model": preset.model}) == preset


def test_change_keeps_a_volume_export_and_a_space_time_stack():
    volume = build_preset(
        tiny_3d(output={"formats": ["gif"], "volume": {"at": [3], "formats": ["npz"]}}), "v.yaml"
    )
    assert physarum.change(volume, {"model.decay": 0.2}).output.volume == volume.output.volume
    stack = build_preset(tiny_data(output={**TINY["output"], "volume": {"formats": ["npy"]}}), "t.yaml")
    assert physarum.change(stack, {"seed": 4}).output.volume == stack.output.volume


def test_formats_of_a_render_keep_the_other_sections(tmp_path):
    preset = build_preset(tiny_data(checkpoint={"at": [12]}), "t.yaml")
    assert change(preset, ['output.formats=["png"]']).checkpoint == preset.checkpoint


def test_the_full_dump_is_the_portable_dump_and_the_kept_sections():
    preset = build_preset(tiny_data(checkpoint={"every": 12}), "t.yaml")
    dump = full_dump(preset)
    assert dump.pop("checkpoint") == {"every": 12}
    assert dump == preset.portable_dump()
    plain = build_preset(tiny_data(), "t.yaml")
    assert full_dump(plain) == plain.portable_dump() and change(plain, []) == plain
