"""docs/presets-catalogue.md is what scripts/presets_catalogue.py generates from the record
(benchmarks/unreleased/presets-h200.csv) and the presets' descriptions, and it lists every
curated preset."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    """The script as a module (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location(
        "presets_catalogue", ROOT / "scripts" / "presets_catalogue.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


catalogue = load_script()


def test_the_page_is_what_the_script_generates_from_the_record():
    page = (ROOT / "docs" / "presets-catalogue.md").read_text(encoding="utf-8")
    assert page == catalogue.generate(), "run `python scripts/presets_catalogue.py` and commit the page"


def test_every_curated_preset_is_on_the_page_and_every_record_row_is_a_preset():
    page = (ROOT / "docs" / "presets-catalogue.md").read_text(encoding="utf-8")
    names = {path.stem for path in (ROOT / "presets").glob("*.yaml")}
    for name in names:
        assert f"| `{name}` |" in page, name
    assert set(catalogue.record_rows()) <= names


def test_a_changed_record_changes_the_page():
    rows = catalogue.record_rows()
    rows["veins"] = dict(rows["veins"], h200_wall_s="99.9")
    changed = catalogue.generate(rows)
    assert "| 99.9 s |" in changed and changed != catalogue.generate()


def test_the_readme_s_table_is_what_the_script_generates_from_the_e2e_record():
    """README's presets' table (between its markers) comes from the harness's e2e table rows of
    the GPU host and the sizes record; every preset of the e2e case's table is in it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme == catalogue.readme_text(readme), "run `python scripts/presets_catalogue.py` and commit"
    table = catalogue.readme_table()
    source = (ROOT / "scripts" / "cases" / "e2e.py").read_text(encoding="utf-8")
    table_presets = re.search(r'^TABLE_PRESETS = "([^"]+)"', source, re.M)[1].split(",")
    shown = re.findall(r"^\| <img [^|]*\| `([^`]+)` \|", table, re.M)
    assert shown == table_presets  # the e2e case's presets, each once, in its order


def test_a_new_e2e_row_changes_the_readme_s_table():
    walls = catalogue.e2e_walls()
    walls[("cosmos", "warm")] = (12.34, "abc1234")
    changed = catalogue.readme_table(walls=walls)
    assert "| 12.3 s / " in changed and "abc1234" in changed and changed != catalogue.readme_table()
