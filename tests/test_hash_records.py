"""The hash record the README quotes (benchmarks/unreleased/hashes-cpu-2core.txt, written by
`python scripts/preset_hashes.py benchmarks/unreleased/hashes-cpu-2core.txt`) was made from HEAD's
curated presets: each preset's line holds the sha256 of its resolved text (the preset with the
record's overrides, as its outputs embed it), compared here with the presets as they are now. A
preset changed without the record regenerated fails; nothing is rendered."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "benchmarks" / "unreleased" / "hashes-cpu-2core.txt"


def load_script():
    """scripts/preset_hashes.py as a module (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location("preset_hashes", ROOT / "scripts" / "preset_hashes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hashes = load_script()


def recorded() -> dict[str, tuple[int, str]]:
    """The record's resolved-preset lines: name -> (bytes, sha256)."""
    found = {}
    for line in RECORD.read_text().splitlines():
        name, file, size, digest = line.split()
        if file == f"{name}.resolved.yaml":
            found[name] = (int(size), digest)
    return found


CURATED = sorted(path.stem for path in (ROOT / "presets").glob("*.yaml"))


def test_the_record_covers_every_curated_preset_and_every_file_rendered():
    record = recorded()
    assert sorted(record) == CURATED, (
        "run `python scripts/preset_hashes.py benchmarks/unreleased/hashes-cpu-2core.txt`"
    )
    lines = RECORD.read_text().splitlines()
    assert not [line for line in lines if "FAILED" in line]
    for name in CURATED:
        files = [line.split()[1] for line in lines if line.split()[0] == name]
        assert {Path(f).suffix for f in files} >= {".gif", ".mp4", ".webp", ".png"}, name


@pytest.mark.parametrize("name", CURATED)
def test_the_record_was_made_from_this_preset(name):
    preset = yaml.safe_load((ROOT / "presets" / f"{name}.yaml").read_text())
    settings = hashes.overrides(preset, 128, 120)
    assert hashes.resolved_digest(name, settings) == recorded().get(name), (
        f"{name} changed since benchmarks/unreleased/hashes-cpu-2core.txt was written: regenerate it "
        "(python scripts/preset_hashes.py benchmarks/unreleased/hashes-cpu-2core.txt) and check the "
        "README's claims that quote it"
    )
