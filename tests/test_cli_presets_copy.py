"""`physarum presets NAME --copy DIR`: a curated preset and the images it names, written into a
folder so that the copy validates and renders from any working folder; and the comment line
`physarum presets NAME` prints for a preset whose images are relative to its file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from physarum.render.cli.main import main
from physarum.render.preset.catalog import named_images, preset_files, read_shipped

ROOT = Path(__file__).resolve().parent.parent
TINY = [  # a tiny render of the copy: 64 x 64 (--reduce 16), two frames, the PNG alone
    "--reduce",
    "16",
    "--set",
    "run.steps=10",
    "--set",
    "run.steps_per_frame=5",
    "--set",
    "palette.every=1",
    "--set",
    "palette.blend=0",
    "--set",
    "output.formats=[png]",
    "--quiet",
]


def test_copy_validates_and_renders_from_another_folder(tmp_path, monkeypatch, capsys):
    copy = tmp_path / "mine"
    monkeypatch.chdir(tmp_path)
    assert main(["presets", "maze", "--copy", "mine"]) == 0
    assert "physarum validate mine/maze.yaml" in capsys.readouterr().out
    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file()) == [
        "images/maze.png",
        "images/maze_floor.png",
        "maze.yaml",
    ]
    assert (copy / "maze.yaml").read_bytes() == (ROOT / "presets" / "maze.yaml").read_bytes()
    assert (copy / "images" / "maze.png").read_bytes() == (
        ROOT / "presets" / "images" / "maze.png"
    ).read_bytes()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["validate", str(copy / "maze.yaml")]) == 0
    assert "ok" in capsys.readouterr().out
    assert main(["render", str(copy / "maze.yaml"), "--out", "out", *TINY]) == 0
    assert (elsewhere / "out" / "maze" / "maze-s31.png").is_file()


def test_copy_refuses_to_write_over_a_file_and_writes_nothing(tmp_path, capsys):
    copy = tmp_path / "mine"
    (copy / "images").mkdir(parents=True)
    (copy / "images" / "food.png").write_bytes(b"mine")
    assert main(["presets", "feast", "--copy", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "food.png already exists" in err and "nothing was written" in err
    assert sorted(p.name for p in copy.rglob("*")) == ["food.png", "images"]
    assert (copy / "images" / "food.png").read_bytes() == b"mine"


def test_copy_needs_a_curated_name_and_a_folder(tmp_path, capsys):
    assert main(["presets", "--copy", str(tmp_path / "a")]) == 2
    assert "name the curated preset" in capsys.readouterr().err
    assert main(["presets", "mazee", "--copy", str(tmp_path / "a")]) == 2
    assert "did you mean 'maze'?" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["presets", "maze", "--copy", str(tmp_path / "file")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("path", preset_files(), ids=lambda p: p.stem)
def test_every_curated_preset_copies_whole(path, tmp_path, capsys):
    """Every curated preset's images lie under its folder, so that its copy needs no path
    rewritten; the copy holds them all."""
    assert main(["presets", path.stem, "--copy", str(tmp_path)]) == 0
    for image in named_images(read_shipped(path)):
        assert (tmp_path / image).read_bytes() == (path.parent / image).read_bytes()


def test_printed_preset_says_how_to_copy_it_where_it_names_images(capsys):
    assert main(["presets", "embers"]) == 0
    printed = capsys.readouterr().out
    first, rest = printed.split("\n", 1)
    assert first.startswith("# images/food.png") and "physarum presets embers --copy DIR" in first
    assert rest == (ROOT / "presets" / "embers.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(printed)["name"] == "embers"
    assert main(["presets", "quickstart"]) == 0  # no image: the file as shipped
    assert capsys.readouterr().out == (ROOT / "presets" / "quickstart.yaml").read_text(encoding="utf-8")
