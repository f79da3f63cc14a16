"""A saved preset (the live studio's save, explore's kept presets: sections.saved_in) names its
own files relative to the folder it is saved in, but the files that ship with the curated
presets by their absolute path: a relative path from a project into the installed package would
break when the project moves."""

from __future__ import annotations

import os
import shutil

from physarum.render.preset import load_preset
from physarum.render.preset.catalog import PRESETS
from physarum.render.preset.sections import saved_in, saved_path, shipped


def test_a_shipped_image_keeps_its_absolute_path_and_a_project_file_goes_relative(tmp_path):
    image = next((PRESETS.folder() / "images").glob("*.png"))
    own = tmp_path / "project" / "walls.png"
    folder = tmp_path / "project" / "live" / "out"
    assert shipped(str(image)) and not shipped(str(own))
    assert saved_path(str(image), folder) == str(image)
    assert saved_path(str(own), folder) == "../../walls.png"
    dump = {"world": {"walls": {"image": str(image)}, "trail": {"image": str(own)}}}
    assert saved_in(dump, folder) == {
        "world": {"walls": {"image": str(image)}, "trail": {"image": "../../walls.png"}}
    }


def test_a_saved_curated_preset_with_images_validates_after_its_project_moves(tmp_path):
    preset = load_preset(PRESETS.folder() / "maze.yaml")
    project = tmp_path / "a" / "project"
    project.mkdir(parents=True)
    (project / "maze-live.yaml").write_text(preset.saved_yaml(project))
    moved = tmp_path / "b" / "elsewhere" / "deeper"
    moved.parent.mkdir(parents=True)
    shutil.move(str(project), str(moved))
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        again = load_preset(moved / "maze-live.yaml")
    finally:
        os.chdir(cwd)
    assert again.model == preset.model
