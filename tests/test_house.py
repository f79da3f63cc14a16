"""The house's import rules (scripts/check_imports.py): no stage of render/ imports a later one,
no function-level import of a physarum module but those marked for start-up cost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "scripts" / "check_imports.py"


def run_check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True)


def test_the_house_keeps_its_import_rules():
    done = run_check(ROOT)
    assert done.returncode == 0, done.stdout


def test_a_backward_import_and_a_dodged_cycle_are_named(tmp_path):
    preset = tmp_path / "render" / "preset"
    preset.mkdir(parents=True)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "render" / "__init__.py").write_text("")
    (preset / "__init__.py").write_text("")
    (preset / "bad.py").write_text(
        "from physarum.render.world.maps import wall_cells\n\n\n"
        "def late():\n"
        "    from physarum.render.base import errors\n\n\n"
        "def heavy():\n"
        "    from physarum.render.base import files  # start-up: a heavy library\n"
    )
    done = run_check(tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert any(line.startswith("render/preset/bad.py:1: preset/ imports") for line in lines)
    assert any(line.startswith("render/preset/bad.py:5: function-level import") for line in lines)
    assert not any("bad.py:9" in line for line in lines)
