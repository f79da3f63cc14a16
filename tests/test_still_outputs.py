"""A render's print stills (output.still) are named like its other outputs: in RenderResult.outputs
and the sidecar's `outputs` as "still.png", "still.tiff" and "still.exr" (no EXR without a look),
in the list `physarum render` prints, and in a sweep's records among the extras (the records'
`outputs` keep their keys, so manifests resume as before). A render without output.still names
exactly what it named before. The EXR carries no preset: FFmpeg's exr encoder writes a fixed
header (docs/outputs.md, "Print stills")."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import yaml

from physarum.render import sweep as sweeps
from physarum.render.cli.main import main
from physarum.render.formats.still import exr, is_still_key, still_key
from physarum.render.out.specs import output_paths
from physarum.render.preset import build_preset
from physarum.render.run import runner
from physarum.render.sweep.chunk import record_outputs
from support import SWEEP_BASE, tiny_data, write_sweep


def still_preset(look: bool = True, outputs=("png",), **still):
    data = tiny_data(output={"formats": list(outputs), "still": {"scale": 2, **still}})
    if look:
        data["look"] = {"bloom": 0.3}
    return build_preset(data, "t.yaml")


def test_the_stills_are_among_the_result_s_outputs_and_the_sidecar_s(tmp_path):
    result = runner.render(
        still_preset(outputs=("png", "gif")), backend="torch", device="cpu", out_dir=tmp_path, quiet=True
    )
    folder = tmp_path / "tiny"
    assert list(result.outputs) == ["png", "gif", "still.png", "still.tiff", "still.exr", "json"]
    for fmt in ("png", "tiff", "exr"):
        assert result.outputs[f"still.{fmt}"] == folder / f"tiny-s3-still.{fmt}"
    assert (
        result.outputs["png"] == folder / "tiny-s3.png" and result.outputs["json"] == folder / "tiny-s3.json"
    )
    sidecar = json.loads(result.outputs["json"].read_text())
    assert sidecar["outputs"] == {
        key: {"file": path.name, "bytes": path.stat().st_size}
        for key, path in result.outputs.items()
        if key != "json"
    }
    assert sidecar["outputs"]["still.tiff"]["bytes"] > 48 * 32 * 4 * 6  # the 96 x 64 16-bit RGB pixels


def test_without_a_look_no_exr_is_named(tmp_path):
    result = runner.render(
        still_preset(look=False), backend="torch", device="cpu", out_dir=tmp_path, quiet=True
    )
    assert [key for key in result.outputs if is_still_key(key)] == ["still.png", "still.tiff"]
    assert not (tmp_path / "tiny" / "tiny-s3-still.exr").exists()
    assert set(json.loads(result.outputs["json"].read_text())["outputs"]) == {
        "png",
        "still.png",
        "still.tiff",
    }


def test_an_exr_alone_without_a_look_writes_and_names_nothing(tmp_path):
    preset = still_preset(look=False, formats=["exr"])
    result = runner.render(preset, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    assert list(result.outputs) == ["png", "json"]
    assert sorted(p.name for p in (tmp_path / "tiny").iterdir() if not p.name.startswith(".")) == [
        "tiny-s3.json",
        "tiny-s3.png",
    ]


def test_a_render_without_a_still_names_what_it_named_before(tmp_path):
    preset = build_preset(tiny_data(output={"formats": ["gif", "mp4", "webp", "png"]}), "t.yaml")
    paths = output_paths(preset, tmp_path)
    assert list(paths) == ["gif", "mp4", "webp", "png", "json"]
    assert all(path.name == f"tiny-s3.{key}" for key, path in paths.items())
    assert still_key("tiff") == "still.tiff" and is_still_key("still.tiff") and not is_still_key("png")


def test_the_command_prints_the_stills(tmp_path, capsys):
    data = tiny_data(output={"formats": ["png"], "still": {"scale": 2, "formats": ["png", "tiff"]}})
    preset = tmp_path / "p.yaml"
    preset.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    assert (
        main(["render", str(preset), "--out", str(out), "--backend", "torch", "--device", "cpu", "--quiet"])
        == 0
    )
    printed = [line.split(" ") for line in capsys.readouterr().out.splitlines()]
    assert [row[0] for row in printed] == ["png", "still.png", "still.tiff", "json"]
    for _, path, size in printed:
        assert int(size) == Path(path).stat().st_size and Path(path).parent == out / "tiny"


def test_a_sweep_record_keeps_its_outputs_and_lists_the_stills_among_its_extras(tmp_path):
    named = {"png": "a/a.png", "still.png": "a/a-still.png", "json": "a/a.json", "still.exr": "a/a-still.exr"}
    assert record_outputs(named) == (
        {"png": "a/a.png", "json": "a/a.json"},
        ["a/a-still.png", "a/a-still.exr"],
    )
    base = {**SWEEP_BASE, "output": {"formats": ["png"], "still": {"scale": 2, "formats": ["png", "tiff"]}}}
    path = write_sweep(tmp_path, base=base, grid={"model.decay": [0.1]})
    options = sweeps.SweepOptions(out_dir=tmp_path / "out", devices="cpu", quiet=True, gallery=False)
    summary = sweeps.run_sweep(sweeps.load_sweep(path), options, log=lambda _: None)
    (record,) = summary.records
    name = record["name"]
    assert set(record["outputs"]) == {"png", "json"}
    assert record["extras"] == [f"{name}/{name}-s3-still.png", f"{name}/{name}-s3-still.tiff"]
    again = sweeps.run_sweep(sweeps.load_sweep(path), options, log=lambda _: None)
    assert again.skipped == 1  # its record resumes: the job is done


def exr_attributes(data: bytes) -> list[str]:
    """The names of an EXR header's attributes (name, type, size, value; an empty name ends it)."""
    assert data[:4] == b"v/1\x01"
    names, at = [], 8
    while data[at] != 0:
        name, kind, rest = data[at:].split(b"\x00", 2)
        (size,) = struct.unpack("<i", rest[:4])
        names.append(name.decode())
        at += len(name) + len(kind) + 2 + 4 + size
    return names


def test_ffmpeg_s_exr_header_is_fixed_so_the_exr_carries_no_preset():
    names = exr_attributes(exr(np.ones((4, 6), np.float32)))
    assert names == [
        "channels",
        "compression",
        "dataWindow",
        "displayWindow",
        "lineOrder",
        "screenWindowCenter",
        "screenWindowWidth",
        "gamma",
        "writer",
    ]


def test_render_from_a_still_s_exr_is_refused_and_never_writes_over_a_still(tmp_path, capsys):
    data = tiny_data(output={"formats": ["png"], "still": {"scale": 1}}, look={"bloom": 0.3})
    preset = tmp_path / "p.yaml"
    preset.write_text(yaml.safe_dump(data))
    flags = ["--backend", "torch", "--device", "cpu", "--quiet"]
    out = tmp_path / "out"
    assert main(["render", str(preset), "--out", str(out), *flags]) == 0
    capsys.readouterr()
    still = out / "tiny" / "tiny-s3-still"
    assert main(["render", "--from", f"{still}.exr", "--out", str(tmp_path / "again"), *flags]) == 2
    err = capsys.readouterr().err
    assert "carries no physarum preset" in err and "Traceback" not in err
    assert not (tmp_path / "again").exists()
    tiff = still.with_suffix(".tiff").read_bytes()
    assert main(["render", "--from", f"{still}.tiff", "--out", str(out), *flags]) == 2
    assert "would write over" in capsys.readouterr().err and still.with_suffix(".tiff").read_bytes() == tiff


def test_a_render_into_object_storage_prints_its_stills(tmp_path, capsys):
    import fsspec

    data = tiny_data(output={"formats": ["png"], "still": {"scale": 2, "formats": ["tiff"]}})
    preset = tmp_path / "p.yaml"
    preset.write_text(yaml.safe_dump(data))
    url = "memory://still-outputs/x"
    assert (
        main(["render", str(preset), "--out", url, "--backend", "torch", "--device", "cpu", "--quiet"]) == 0
    )
    printed = [line.split(" ") for line in capsys.readouterr().out.splitlines()]
    assert [row[:2] for row in printed] == [
        ["png", f"{url}/tiny/tiny-s3.png"],
        ["still.tiff", f"{url}/tiny/tiny-s3-still.tiff"],
        ["json", f"{url}/tiny/tiny-s3.json"],
    ]
    memory = fsspec.filesystem("memory")
    assert int(printed[1][2]) == memory.size("/still-outputs/x/tiny/tiny-s3-still.tiff") > 64 * 96 * 6
    sidecar = json.loads(memory.cat_file("/still-outputs/x/tiny/tiny-s3.json"))
    assert sidecar["outputs"]["still.tiff"]["bytes"] == int(printed[1][2])
    memory.rm("/still-outputs", recursive=True)
