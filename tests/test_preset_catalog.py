"""The catalog of shipped presets and sweeps: every file listed, names and paths resolved, one
clear error for an unknown name, and the package data that ships them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from physarum.render.base.errors import PresetError
from physarum.render.cli.main import main
from physarum.render.preset import catalog
from support import ROOT


def test_the_catalog_lists_every_curated_preset_and_example_sweep():
    assert catalog.preset_files() == sorted((ROOT / "presets").glob("*.yaml"))
    assert catalog.sweep_files() == sorted((ROOT / "sweeps").glob("*.yaml"))
    assert {"quickstart", "veins", "maze", "lettering"} <= set(catalog.PRESETS.names())
    assert {"angles", "random"} <= set(catalog.SWEEPS.names())


def test_folders_are_real_folders_so_image_paths_embed_as_they_always_have():
    # a link tree (.pyroot) or an editable install must not change the embedded image paths
    assert catalog.PRESETS.folder() == (ROOT / "presets").resolve()
    assert not any(part.startswith(".") for part in catalog.PRESETS.folder().relative_to(ROOT).parts)
    assert catalog.SWEEPS.folder() == (ROOT / "sweeps").resolve()


def test_names_resolve_to_shipped_files_and_paths_stay_as_given(tmp_path, monkeypatch):
    assert catalog.resolve_preset_path("veins") == ROOT / "presets" / "veins.yaml"
    assert catalog.resolve_sweep_path("angles") == ROOT / "sweeps" / "angles.yaml"
    given = tmp_path / "mine.yaml"
    given.write_text("name: mine\n")
    assert catalog.resolve_preset_path(str(given)) == given
    # a YAML path that does not exist is left for loading to report, not taken for a name
    assert catalog.resolve_preset_path("absent.yaml").name == "absent.yaml"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "veins").write_text("name: veins\n")  # a file in the working folder wins
    assert catalog.resolve_preset_path("veins") == (tmp_path / "veins").relative_to(tmp_path)
    (tmp_path / "quickstart").mkdir()  # a folder (e.g. `render --out .`'s output) does not
    assert catalog.resolve_preset_path("quickstart") == ROOT / "presets" / "quickstart.yaml"


def test_an_unknown_name_is_one_error_with_did_you_mean_and_the_list():
    with pytest.raises(PresetError) as caught:
        catalog.resolve_preset_path("vein")
    (problem,) = caught.value.problems
    assert problem.startswith("vein: no such file, and no curated preset of that name")
    assert "did you mean 'veins'?" in problem and "quickstart" in problem
    with pytest.raises(PresetError, match="did you mean 'angles'"):
        catalog.resolve_sweep_path("angle")
    with pytest.raises(PresetError, match="no example sweep of that name; example sweeps: "):
        catalog.resolve_sweep_path("zzzzzz")


@pytest.mark.parametrize(
    "argv, hint",
    [
        (["render", "vein", "--backend", "torch", "--device", "cpu"], "did you mean 'veins'?"),
        (["sweep", "angle", "--dry-run"], "did you mean 'angles'?"),
        (["validate", "quickstart", "labyrnth"], "did you mean 'labyrinth'?"),
    ],
)
def test_the_cli_exits_2_on_an_unknown_name(argv, hint, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and hint in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())


def test_the_cli_finds_shipped_files_from_any_working_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["presets"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == catalog.PRESETS.names()
    assert main(["sweep", "angles", "--dry-run", "--out", "out"]) == 0
    assert "sweep angles: 16 jobs" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folder(package: str, package_dir: dict) -> Path:
    """Where setuptools takes a package from: its own mapping, or its parent's plus its name."""
    parent, _, name = package.rpartition(".")
    if package in package_dir:
        return ROOT / package_dir[package]
    return _folder(parent, package_dir) / name


def test_every_python_package_of_the_tree_is_in_the_wheel():
    config = _setuptools()
    roots = {package: ROOT / folder for package, folder in config["package-dir"].items()}
    found = {
        ".".join([package, *init.parent.relative_to(root).parts])
        for package, root in roots.items()
        for init in root.rglob("__init__.py")
    }
    assert found == set(config["packages"])
    assert {"physarum.render.preset", "physarum.presets", "physarum.sweeps"} <= found


def test_package_data_ships_every_preset_image_and_sweep():
    """A wheel holds what package-data names: every data file must match one of its globs
    (or the wheel misses it), and every glob must match a file (or it ships nothing, as the
    declared but missing py.typed once did)."""
    config = _setuptools()
    for package, patterns in config["package-data"].items():
        folder = _folder(package, config["package-dir"])
        shipped = {path for pattern in patterns for path in folder.glob(pattern)}
        for pattern in patterns:
            assert list(folder.glob(pattern)), f"{package}: {pattern} matches no file"
        if package in ("physarum.presets", "physarum.sweeps"):
            data = {
                path
                for path in folder.rglob("*")
                if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts
            }
            assert data - shipped == set(), f"{package}: not in package-data"
    assert {"physarum.presets", "physarum.sweeps"} <= set(config["package-data"])
    for package in ("physarum.render", "physarum.kernels"):
        assert "py.typed" in config["package-data"][package]
