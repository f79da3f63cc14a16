"""explore's kept presets (render/explore/outputs.py, kept/<name>.yaml) name their image paths
relative to kept/ (Preset.saved_yaml), as a preset's paths are read against its own folder: a
kept preset of an image world renders the candidate's PNG after its project (the images and the
explore's folder) is moved elsewhere, from the project's folder byte for byte and from another
working directory pixel for pixel."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from PIL import Image

from physarum.render.cli.main import main
from support import world_data, write_preset

FLAGS = ["--rounds", "1", "--population", "2", "--keep", "1", "--size", "48", "--steps", "12"]
CPU = ["--backend", "torch", "--device", "cpu", "--quiet"]


@pytest.fixture
def kept(images, tmp_path_factory, monkeypatch):
    """An explore of a world preset whose walls, trail image and spawn image lie beside it, run
    from the project's folder, the project then moved: (the moved project, its kept preset, the
    PNG the explore rendered of it)."""
    project = tmp_path_factory.mktemp("project")
    for image in ("wall.png", "gradient.png", "square.png"):
        shutil.copy(images / image, project / image)
    monkeypatch.chdir(project)
    path = write_preset(project, world_data(output={"formats": ["png"]}))
    assert main(["explore", str(path), *FLAGS, *CPU, "--out", "out"]) == 0
    moved = tmp_path_factory.mktemp("moved") / "project"
    monkeypatch.chdir(moved.parent)
    shutil.move(str(project), moved)  # nothing left where the explore ran
    (kept_file,) = (moved / "out" / "world-explore" / "kept").iterdir()
    name = kept_file.stem
    (png,) = (moved / "out" / "world-explore").glob(f"candidates/{name}/{name}-s*.png")
    return moved, kept_file, png


def test_a_kept_preset_names_its_images_relative_to_its_folder(kept):
    _, kept_file, _ = kept
    data = yaml.safe_load(kept_file.read_text())
    named = [data["world"]["walls"]["path"], data["world"]["trail_image"]["path"]]
    named.append(data["species"][1]["agents"]["image"])
    assert named == ["../../../wall.png", "../../../gradient.png", "../../../square.png"]
    assert all((kept_file.parent / path).resolve().is_file() for path in named)


def rendered(kept_file: Path, png: Path) -> Path:
    """The PNG `physarum render KEPT` writes in the working folder's again/."""
    assert main(["render", str(kept_file), *CPU, "--out", "again"]) == 0
    (again,) = Path("again").glob(f"*/{png.name}")
    return again


def test_a_moved_kept_preset_renders_its_png_from_any_folder(kept, tmp_path, monkeypatch):
    """From the moved project's folder, the same bytes (the paths the PNG embeds are relative to
    the working folder, as they were when the explore ran); from another folder, the same pixels."""
    moved, kept_file, png = kept
    monkeypatch.chdir(moved)
    assert rendered(kept_file, png).read_bytes() == png.read_bytes()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with Image.open(rendered(kept_file, png)) as again, Image.open(png) as first:
        assert again.size == first.size and again.tobytes() == first.tobytes()
