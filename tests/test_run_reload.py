"""render --from FILE is self-contained: a world output renders again byte for byte from its own
carried images, in an empty folder, reading no image file; what it carries is checked (hash,
size, damage), and a file that carries no images needs --images DIR.

A shared file decides only what it renders: its preset's checkpoint and output.fields sections
are not taken, FILE itself is never written over (an output, a --frames-dir frame, a raw field),
and a sidecar beside FILE that names other encoder builds gets a note."""

from __future__ import annotations

import json
import os
import shutil
import sys

import numpy as np
import pytest
import yaml
from PIL import Image

from physarum.render.cli.main import main
from physarum.render.formats.png import save_png
from physarum.render.formats.registry import read_embedded
from physarum.render.preset import carried
from physarum.render.preset.provenance import encoder_builds
from support import tiny_data, world_data, write_preset

FORMATS = ("gif", "mp4", "png")


def render(*args) -> int:
    return main(["render", *map(str, args), "--quiet", "--backend", "torch", "--device", "cpu"])


@pytest.fixture
def shared(images, tmp_path_factory, monkeypatch):
    """A world render's outputs (its images then removed), and an empty folder elsewhere to run in."""
    path = write_preset(images, world_data())
    monkeypatch.chdir(images)
    assert render(path, "--out", images / "a", "--frames-dir", images / "frames") == 0
    outputs = {fmt: images / "a" / "world" / f"world-s3.{fmt}" for fmt in (*FORMATS, "json")}
    copies = tmp_path_factory.mktemp("shared")
    for fmt, output in outputs.items():
        outputs[fmt] = shutil.copy(output, copies / output.name)
    for image in ("wall.png", "gradient.png", "square.png"):
        os.remove(images / image)  # nothing to read them from
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    return outputs, images / "frames"


@pytest.mark.parametrize("fmt", [*FORMATS, "json"])
def test_a_world_output_renders_again_byte_for_byte_from_what_it_carries(shared, fmt):
    outputs, _ = shared
    assert render("--from", outputs[fmt], "--out", "again") == 0
    assert os.listdir(".") == ["again"]  # nothing but the outputs, nothing read from here
    for kind in FORMATS:
        with open(f"again/world/world-s3.{kind}", "rb") as again:
            assert again.read() == outputs[kind].read_bytes(), kind


def test_every_output_and_frame_carries_the_same_images(shared):
    outputs, frames = shared
    texts = {read_embedded(path) for path in (*outputs.values(), *sorted(frames.glob("*.png")))}
    assert len(texts) == 1
    _, block = carried.split(texts.pop())
    assert len(carried.read_block(block)) == 3


def crafted(outputs, tmp_path, change) -> str:
    """The shared sidecar with its embedded text changed by `change`."""
    sidecar = json.loads(outputs["json"].read_text())
    sidecar["preset_yaml"] = change(sidecar["preset_yaml"])
    path = tmp_path / "crafted.json"
    path.write_text(json.dumps(sidecar))
    return path


def refused(path, *extra, capsys) -> str:
    """The one message render --from `path` exits 2 with, having written nothing."""
    capsys.readouterr()
    assert render("--from", path, "--out", "o", *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert not os.path.exists("o")
    return err


def test_a_carried_image_whose_hash_does_not_match_is_refused(shared, tmp_path, capsys):
    outputs, _ = shared
    text = json.loads(outputs["json"].read_text())["preset_yaml"]
    digest = text.split('"sha256": "')[1][:64]
    path = crafted(outputs, tmp_path, lambda t: t.replace(digest, "f" * 64))
    assert f"does not match its sha256 {'f' * 64}" in refused(path, capsys=capsys)


def test_a_truncated_or_corrupt_payload_is_refused(shared, tmp_path, capsys):
    outputs, _ = shared
    cut = crafted(outputs, tmp_path, lambda t: t[: len(t) * 3 // 4])
    assert "its carried images cannot be read" in refused(cut, capsys=capsys)
    corrupt = crafted(outputs, tmp_path, lambda t: t.replace("\n# end", "!\n# end"))
    assert "is not base64" in refused(corrupt, capsys=capsys)


def test_an_oversize_payload_is_refused_to_read_and_to_write(shared, tmp_path, capsys, monkeypatch):
    outputs, _ = shared
    monkeypatch.setattr(carried, "MAX_CARRIED_BYTES", 1000)
    assert "at most 1000 are read" in refused(outputs["gif"], capsys=capsys)
    write_preset(tmp_path, world_data())
    for image in ("wall.png", "gradient.png", "square.png"):
        shutil.copy(outputs["png"], tmp_path / image)  # any image will do
    capsys.readouterr()
    assert render(tmp_path / "preset.yaml", "--out", "o") == 2
    err = capsys.readouterr().err
    assert "at most 1000 are carried: shrink the images" in err and "Traceback" not in err
    assert not os.path.exists("o/world") or not os.listdir("o/world")


def test_a_file_that_carries_no_images_needs_images_dir(shared, tmp_path, capsys):
    outputs, _ = shared
    old = crafted(outputs, tmp_path, lambda t: carried.split(t)[0])  # as output version 2 wrote it
    err = refused(old, capsys=capsys)
    assert "but carries none" in err and "--images DIR" in err and "world.walls.path" in err
    folder = tmp_path / "mine"
    folder.mkdir()
    block = carried.read_block(carried.split(json.loads(outputs["json"].read_text())["preset_yaml"])[1])
    for path, image in block.items():  # the images again, where the user says they are
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image.pixels(), "L").save(folder / path)
    assert render("--from", old, "--out", "again", "--images", folder) == 0
    assert open("again/world/world-s3.gif", "rb").read() == outputs["gif"].read_bytes()
    assert "--images" in refused(old, "--images", tmp_path / "nowhere", capsys=capsys)


def test_an_absolute_or_escaping_path_is_refused_with_images_dir_and_not_carried_without(
    shared, tmp_path, capsys
):
    outputs, _ = shared
    for bad in ("/etc/hostname", "../wall.png"):
        path = crafted(outputs, tmp_path, lambda t, bad=bad: t.replace("path: wall.png", f"path: {bad}"))
        err = refused(path, "--images", tmp_path, capsys=capsys)
        assert f"world.walls.path: the image path '{bad}'" in err and "--images reads only images" in err
        err = refused(path, capsys=capsys)  # without --images: a name FILE does not carry, never opened
        assert "world.walls.path" in err and "does not carry them" in err


def test_images_without_from_is_refused(images, capsys):
    assert render(write_preset(images, world_data()), "--images", images, "--out", images / "o") == 2
    assert "give --from FILE" in capsys.readouterr().err


def test_a_set_path_the_user_names_is_read_and_may_not_take_a_carried_images_name(shared, capsys):
    outputs, _ = shared
    mine = np.zeros((8, 8), np.uint8)
    mine[:, :2] = 255
    Image.fromarray(mine, "L").save("mine.png")
    assert render("--from", outputs["gif"], "--out", "a", "--set", "world.walls.path=mine.png") == 0
    assert "path: mine.png" in read_embedded("a/world/world-s3.gif")  # read from here, and carried
    Image.fromarray(np.zeros((8, 8), np.uint8), "L").save("gradient.png")  # the trail image's name
    capsys.readouterr()
    assert render("--from", outputs["gif"], "--out", "b", "--set", "world.walls.path=./gradient.png") == 2
    assert "the name of another image this render reads" in capsys.readouterr().err


@pytest.fixture
def tiny_outputs(tmp_path, monkeypatch):
    """A tiny render's GIF, PNG and sidecar (o/tiny/), its --frames-dir frames (frames/) and a raw
    field as PNG (o/tiny/tiny-s3-fields-6.png), rendered in tmp_path, the working folder."""
    monkeypatch.chdir(tmp_path)
    path = write_preset(tmp_path, tiny_data(output={"formats": ["gif", "png"]}))
    flags = ("--frames-dir", "frames", "--fields-at", "6", "--set", "output.fields.formats=[png]")
    assert render(path, "--out", "o", *flags) == 0
    return tmp_path / "o" / "tiny"


def with_local_sections(source, target, volume: bool = False) -> None:
    """`source` (a GIF or PNG) again as `target`, its embedded preset given a checkpoint section
    and raw fields (with `volume`, a volume export instead): what a stranger may put in a shared
    file."""
    header, text = read_embedded(source).split("\n", 1)
    data = yaml.safe_load(text)
    if volume:
        data["output"]["volume"] = {"formats": ["npz", "npy", "obj", "stl"]}
    else:
        data["checkpoint"] = {"every": 1}
        data["output"]["fields"] = {"every": 1, "formats": ["npz", "png"]}
    crafted = f"{header}\n{yaml.safe_dump(data, sort_keys=False)}"
    with Image.open(source) as image:
        if target.suffix == ".png":
            with open(target, "wb") as file:
                save_png(file, np.asarray(image.convert("RGB")), crafted)
        else:
            image.save(target, save_all=True, comment=crafted.encode())


@pytest.mark.parametrize("fmt", ["gif", "png"])
def test_a_shared_files_checkpoint_and_fields_sections_are_not_taken(tiny_outputs, fmt, capsys):
    crafted = tiny_outputs.parent.parent / f"crafted.{fmt}"
    with_local_sections(tiny_outputs / f"tiny-s3.{fmt}", crafted)
    assert "checkpoint:" in read_embedded(crafted)
    capsys.readouterr()
    assert render("--from", crafted, "--out", "again") == 0
    err = capsys.readouterr().err
    assert "its preset's checkpoint and output.fields are not taken from a shared file" in err, err
    written = sorted(os.listdir("again/tiny"))
    assert written == ["tiny-s3.gif", "tiny-s3.json", "tiny-s3.png"], written  # no checkpoint, no field
    assert open("again/tiny/tiny-s3.gif", "rb").read() == (tiny_outputs / "tiny-s3.gif").read_bytes()
    assert render("--from", crafted, "--out", "mine", "--checkpoint-at", "9") == 0  # the user's own flag
    assert sorted(os.listdir("mine/tiny"))[0] == "tiny-s3-checkpoint-9.npz"


@pytest.mark.parametrize(
    "which, flags",
    [
        ("frame", ("--out", "again", "--frames-dir", "frames")),
        ("link", ("--out", "again", "--frames-dir", "frames")),
        ("field", ("--out", "o", "--fields-at", "6")),
        ("output", ("--out", "o")),
    ],
)
def test_from_a_file_the_render_would_write_is_refused_and_left_as_it_was(tiny_outputs, which, flags, capsys):
    frame = tiny_outputs.parent.parent / "frames" / "tiny-s3-00001.png"
    if which == "link":
        os.symlink(frame, "link.png")
    source = {"frame": frame, "link": "link.png", "field": tiny_outputs / "tiny-s3-fields-6.png"}.get(
        which, tiny_outputs / "tiny-s3.png"
    )
    before = os.stat(source)
    capsys.readouterr()
    assert render("--from", source, *flags) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "would write over" in err, err
    after = os.stat(source)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not os.path.exists("again")
    assert render("--from", source, "--out", "again", "--frames-dir", "elsewhere", "--fields-at", "6") == 0


def test_a_sidecar_naming_other_encoder_builds_gets_a_note(tiny_outputs, capsys):
    sidecar = tiny_outputs / "tiny-s3.json"
    data = json.loads(sidecar.read_text())
    assert data["encoders"] == encoder_builds()
    capsys.readouterr()
    assert render("--from", tiny_outputs / "tiny-s3.gif", "--out", "a") == 0
    assert "encoder builds" not in capsys.readouterr().err  # this install's own builds
    data["encoders"].update(av="99.0.0", libx264="core 1\x1b[2J")
    sidecar.write_text(json.dumps(data))
    for source in ("tiny-s3.gif", "tiny-s3.json"):
        assert render("--from", tiny_outputs / source, "--out", "b") == 0
        err = capsys.readouterr().err
        assert f"av 99.0.0 (here {encoder_builds()['av']})" in err and "core 1\\x1b[2J" in err, err
        assert "the MP4 this render writes may differ" in err
    limit = sys.getrecursionlimit()
    sidecar.write_text("[" * (limit * 2) + "]" * (limit * 2))  # a stranger's sidecar: no note, no traceback
    assert render("--from", tiny_outputs / "tiny-s3.gif", "--out", "c") == 0
    assert "encoder builds" not in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["gif", "png"])
def test_a_shared_files_volume_section_is_not_taken(tiny_outputs, fmt, capsys):
    """output.volume makes a render write whole volumes (a 2D preset: its space-time stack): how
    a render writes extras, never taken from a shared file; the user's own --set asks for it."""
    crafted = tiny_outputs.parent.parent / f"crafted.{fmt}"
    with_local_sections(tiny_outputs / f"tiny-s3.{fmt}", crafted, volume=True)
    assert "volume:" in read_embedded(crafted)
    capsys.readouterr()
    assert render("--from", crafted, "--out", "again") == 0
    err = capsys.readouterr().err
    assert "output.volume" in err and "not taken from a shared file" in err, err
    written = sorted(os.listdir("again/tiny"))
    assert written == ["tiny-s3.gif", "tiny-s3.json", "tiny-s3.png"], written  # no space-time stack
    assert render("--from", crafted, "--out", "mine", "--set", "output.volume.formats=[npz]") == 0
    assert "tiny-s3-spacetime.npz" in os.listdir("mine/tiny")  # the user's own setting


@pytest.mark.parametrize("name", ["tiny-s3-spacetime.npz", "tiny-s3-spacetime.obj"])
def test_from_a_file_named_as_a_volume_export_of_the_render_is_refused(tiny_outputs, name, capsys):
    """FILE (a PNG under a space-time export's name: no format's suffix reads as a PNG) is never
    written over by the export of the render it starts."""
    source = tiny_outputs / name
    shutil.copy(tiny_outputs / "tiny-s3.png", source)
    before = source.read_bytes()
    capsys.readouterr()
    setting = f"output.volume.formats=[{name.rsplit('.', 1)[1]}]"
    assert render("--from", source, "--out", "o", "--set", setting) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "would write over" in err, err
    assert "a volume export" in err, err
    assert source.read_bytes() == before
    assert render("--from", source, "--out", "elsewhere", "--set", setting) == 0
