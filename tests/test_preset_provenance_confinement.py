"""A shared file's image paths are read from the local file system only under the folder the user
names with --images (or those that ship with physarum); absolute and escaping image paths in a
carried preset are refused there."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from PIL import Image

from physarum.render.cli.main import main
from physarum.render.preset import build_preset
from physarum.render.preset.catalog import PRESETS
from physarum.render.preset.provenance import embedded_text
from support import tiny_data


def shared_file(folder, walls_path: str):
    """A sidecar as a stranger could craft it: a tiny world preset whose walls image is walls_path
    (carrying no images, as files of output version 2 and earlier)."""
    preset = build_preset(tiny_data(name="shared"), "p.yaml")
    text = embedded_text(preset)  # tiny has no world section: one is added
    text = text.rstrip("\n") + f"\nworld:\n  walls:\n    path: {json.dumps(walls_path)}\n"
    path = folder / "shared.json"
    path.write_text(json.dumps({"preset_yaml": text}))
    return path


@pytest.fixture
def private_image(tmp_path):
    """An image outside the folder the render runs from (a stranger must not read it)."""
    secret = tmp_path / "private" / "secret.png"
    secret.parent.mkdir()
    pixels = np.zeros((32, 48), np.uint8)
    pixels[:, :8] = 255
    Image.fromarray(pixels, "L").save(secret)
    return secret


def render_from(path, out, *extra) -> int:
    return main(["render", "--from", str(path), "--out", str(out), "--quiet", "--backend", "torch", *extra])


@pytest.mark.parametrize("kind", ["absolute", "parent", "home", "link"])
def test_a_shared_file_cannot_read_an_image_outside_the_folder(
    kind, tmp_path, private_image, monkeypatch, capsys
):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    if kind == "link":
        os.symlink(private_image, here / "innocent.png")
    walls = {
        "absolute": str(private_image),
        "parent": "../private/secret.png",
        "home": "~/secret.png",
        "link": "innocent.png",
    }[kind]
    assert render_from(shared_file(here, walls), here / "out", "--images", str(here)) == 2
    err = capsys.readouterr().err
    assert "world.walls.path: the image path" in err and "--images reads only images under its" in err
    assert "Traceback" not in err and err.count("\n") == 1 and not (here / "out").exists()


def test_images_under_the_folder_the_users_own_set_and_shipped_images_are_read(
    tmp_path, private_image, monkeypatch
):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    (here / "walls.png").write_bytes(private_image.read_bytes())
    assert render_from(shared_file(here, "walls.png"), here / "a", "--images", ".") == 0
    crafted = shared_file(here, str(private_image))
    assert (
        render_from(crafted, here / "b", "--set", f"world.walls.path={private_image}") == 0
    )  # named by the user
    shipped = PRESETS.folder() / "images" / "maze.png"
    for extra in ((), ("--images", ".")):
        assert render_from(shared_file(here, str(shipped)), here / "c", *extra) == 0


# paths the OS refuses: a NUL, a lone surrogate (no UTF-8 for it), one that surrogateescape
# writes as an invalid byte, a name too long (ENAMETOOLONG), a path too long
REFUSED_PATHS = ["x\0y.png", "\ud800.png", "\udcff.png", "a" * 300 + ".png", "a/" * 3000 + "x.png"]


@pytest.mark.parametrize(
    "walls", REFUSED_PATHS, ids=["nul", "surrogate", "bad-byte", "long-name", "long-path"]
)
def test_a_shared_file_naming_a_path_the_os_refuses_is_one_message(tmp_path, capsys, walls):
    """Read through --images DIR: the confinement check resolved the path and raised ValueError
    (a NUL, a surrogate) as a traceback; the NUL was mended in the carried block's reader once
    and came back through this road."""
    folder = tmp_path / "images"
    folder.mkdir()
    argv = ["render", "--from", str(shared_file(tmp_path, walls)), "--images", str(folder)]
    assert main([*argv, "--out", str(tmp_path / "out"), "--quiet", "--backend", "torch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("error:") == 1 and "Traceback" not in err
    assert err.isascii() or err.isprintable()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "walls", REFUSED_PATHS, ids=["nul", "surrogate", "bad-byte", "long-name", "long-path"]
)
def test_a_preset_file_naming_a_path_the_os_refuses_is_one_message(tmp_path, capsys, walls):
    path = tmp_path / "p.yaml"
    path.write_text(
        json.dumps(tiny_data(world={"walls": {"path": walls}})), encoding="utf-8", errors="surrogateescape"
    )
    assert main(["render", str(path), "--out", str(tmp_path / "out"), "--quiet", "--backend", "torch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and "walls" in err
    assert not (tmp_path / "out").exists()
