"""pyproject.toml ships every package of the tree: a new stage folder left out of `packages`
would be missing from the wheel (an editable install hides it)."""

from __future__ import annotations

import tomllib

from support import ROOT


def test_every_package_folder_is_in_the_wheels_package_list():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(project["tool"]["setuptools"]["packages"])
    folders = {"render": "physarum.render", "kernels": "physarum.kernels"}
    found = set()
    for folder, package in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            if "__pycache__" not in parts:
                found.add(".".join((package, *parts)))
    assert found - listed == set(), f"packages missing from pyproject.toml: {sorted(found - listed)}"
    data = project["tool"]["setuptools"]["package-data"]
    for package, patterns in data.items():
        assert package in listed, f"package-data names {package}, which is not a package"
        assert patterns, package
