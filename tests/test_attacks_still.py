"""Attacks on `physarum still` (render/commands/still.py): every refusal is one message."""

from __future__ import annotations

import struct

import pytest

from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from physarum.render.commands import still as stills
from physarum.render.formats.registry import read_embedded
from physarum.render.formats.still import still_bytes
from physarum.render.preset import build_preset
from support import tiny_data, write_preset


def test_a_print_too_large_even_at_1_dpi_names_what_fits():
    """On a host with a few GiB free, a 9999 x 9999 in print at 1 dpi does not fit: the advice's
    search for a dpi found none and max() raised (a traceback)."""
    preset = build_preset(tiny_data(look={"curve": "aces"}), "t.yaml")
    available = still_bytes(2000, 1333) + 10  # room for a 2000 x 1333 still
    call = stills.StillCall(out="unused", print_size="9999x9999in", dpi=300)
    with pytest.raises(RenderError, match=r"not even 1 dpi at 9999x9999in fits here .*--size (\d+)"):
        stills.check(preset, call, available)


def test_render_from_a_stills_tiff_renders_what_its_png_does(tmp_path, capsys):
    """docs/outputs.md: every output renders again with --from; a still's TIFF carries the preset
    in its XMP tag, and --from once read it as a PNG ('carries no physarum preset')."""
    preset_file = write_preset(tmp_path, tiny_data(look={"curve": "aces"}, output={"formats": ["png"]}))
    folder = tmp_path / "still" / "tiny"
    assert (
        main(
            ["still", str(preset_file), "--formats", "png,tiff", "--out", str(tmp_path / "still"), "--quiet"]
        )
        == 0
    )
    texts = [read_embedded(next(folder.glob(f"*.{fmt}"))) for fmt in ("png", "tiff")]
    assert texts[0] == texts[1] and "name: tiny" in texts[0]
    assert (
        main(["render", "--from", str(next(folder.glob("*.tiff"))), "--out", str(tmp_path / "r"), "--quiet"])
        == 0
    )
    assert (tmp_path / "r" / "tiny" / "tiny-s3.png").exists()


def test_a_tiff_from_a_stranger_is_read_within_bounds(tmp_path):
    tiff = tmp_path / "x.tiff"
    header = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 1)
    tiff.write_bytes(header + struct.pack("<HHII", 700, 1, 2**31, 64) + bytes(4))  # a 2 GiB tag
    with pytest.raises(ValueError, match="its XMP tag is 2147483648 bytes; at most 1000 are read"):
        read_embedded(tiff, 1000)
    tiff.write_bytes(header + struct.pack("<HHII", 700, 1, 500, 64) + bytes(4))  # cut short
    with pytest.raises(ValueError, match="runs past the file's end"):
        read_embedded(tiff, 1000)
    tiff.write_bytes(b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 60000))
    with pytest.raises(ValueError, match="60000 entries"):
        read_embedded(tiff, 1000)


@pytest.mark.parametrize("fmt", ["png", "tiff"])
def test_render_from_a_print_still_never_writes_over_it(tmp_path, capsys, fmt):
    """render --from out/x-still.png --out out rendered output.still again over the file it read."""
    data = tiny_data(
        look={"curve": "aces"}, output={"formats": ["png"], "still": {"formats": ["png", "tiff"]}}
    )
    out = tmp_path / "out"
    assert main(["render", str(write_preset(tmp_path, data)), "--out", str(out), "--quiet"]) == 0
    source = out / "tiny" / f"tiny-s3-still.{fmt}"
    before = {p.name: p.stat().st_mtime_ns for p in (out / "tiny").iterdir()}
    capsys.readouterr()
    assert (
        main(["render", "--from", str(source), "--out", str(out), "--quiet", "--set", "model.decay=0.2"]) == 2
    )
    assert "would write over" in capsys.readouterr().err
    assert {p.name: p.stat().st_mtime_ns for p in (out / "tiny").iterdir()} == before


def test_the_apis_formats_of_a_still_name_a_stills_formats(tmp_path):
    """physarum.still(formats=['png', 3]) named a render's formats (gif, mp4, webp, png)."""
    import physarum

    preset = build_preset(tiny_data(look={"curve": "aces"}), "t.yaml")
    with pytest.raises(TypeError, match=r"each format is a name \(png, tiff, exr\), got int 3"):
        physarum.still(preset, out=tmp_path, formats=["png", 3])
    with pytest.raises(TypeError, match=r"e.g. \['png', 'exr'\], got str 'png'"):
        physarum.still(preset, out=tmp_path, formats="png")
    with pytest.raises(TypeError, match=r"e.g. \['gif', 'png'\], got str 'png'"):
        physarum.render(preset, out=tmp_path, formats="png")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ["s3://bucket/prints", "memory://b/x", "file:///tmp/x"])
def test_a_still_into_a_url_is_refused_not_written_into_a_local_folder_named_s3(
    tmp_path, capsys, monkeypatch, url
):
    import physarum

    monkeypatch.chdir(tmp_path)
    preset_file = write_preset(tmp_path, tiny_data(look={"curve": "aces"}))
    assert main(["still", str(preset_file), "--out", url, "--quiet"]) == 2
    assert "physarum still writes into a local folder, not a URL" in capsys.readouterr().err
    from pathlib import Path

    for out in (url, Path(url)):
        with pytest.raises(RenderError, match="not a URL"):
            physarum.still(physarum.load(str(preset_file)), out=out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preset.yaml"]
