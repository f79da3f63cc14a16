"""Golden outputs: small renders pinned by sha256, so that no change alters what a preset makes
without saying so.

Every file shared so far renders again only while these pins hold: `render --from` reproduces a
file byte for byte only if the model, spawning, colouring and encoders are those that made it. A
change that alters any pinned output must update tests/golden/pins.json in the same commit, bump
OUTPUT_VERSION and say what changed in CHANGELOG.md (docs/outputs.md says how).

Pinned: the GIF and PNG of a plain preset, a world preset (walls, trail image, food, reflecting
boundary), a species preset and a two-job sweep, and each render's final simulation state; on
the reference and on the Triton kernels (in the interpreter, or on CUDA where present), which must
give the same bytes. The plain preset's MP4 and WebP are pinned too ("plain-encoded"): their bytes
are also those of the encoder builds (libx264 in PyAV's wheel, libwebp in Pillow's), so these pins
hold for the builds pyproject.toml pins, and only for them: tests/test_dependencies.py fails
first where another build is installed (docs/outputs.md, "Which bytes are promised"). A pin
update that comes from a new encoder pin is an output version of its own, like any other.

To rewrite the pins after a deliberate change: PHYSARUM_UPDATE_GOLDEN=1 (the run then fails,
naming what it rewrote, so that an update is never mistaken for a pass).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import torch

from physarum.render.cli.main import main
from physarum.render.preset import load_preset
from physarum.render.sim.simulation import make_simulation

GOLDEN = Path(__file__).resolve().parent / "golden"
ROOT = GOLDEN.parent.parent
PINS = GOLDEN / "pins.json"
PRESETS = ("plain", "world", "species")
UPDATE = os.environ.get("PHYSARUM_UPDATE_GOLDEN") == "1"


BACKENDS = [
    "torch",
    pytest.param(
        "triton",
        marks=[pytest.mark.interpreter, pytest.mark.slow],
    ),
]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def state_digest(state) -> str:
    """sha256 of a state's position, heading, trail and step, as bytes in that order."""
    parts = (state.position, state.heading, state.trail, state.step)
    return sha256(b"".join(t.detach().cpu().contiguous().numpy().tobytes() for t in parts))


def file_digests(out: Path) -> dict[str, str]:
    """sha256 of every GIF and PNG under `out`, by path relative to it."""
    files = sorted(p for p in out.rglob("*") if p.suffix in (".gif", ".png") and p.name != "contact.png")
    return {p.relative_to(out).as_posix(): sha256(p.read_bytes()) for p in files}


def device_of(backend: str) -> str:
    return "cuda" if backend == "triton" and torch.cuda.is_available() else "cpu"


def check(name: str, found: dict[str, str]) -> None:
    pins = json.loads(PINS.read_text()) if PINS.exists() else {}
    if UPDATE:
        if pins.get(name) != found:
            pins[name] = found
            PINS.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n")
            pytest.fail(
                f"golden pins of {name!r} rewritten in {PINS}; run again without "
                "PHYSARUM_UPDATE_GOLDEN to check them"
            )
        return
    assert name in pins, f"no pins for {name!r} in {PINS}: set PHYSARUM_UPDATE_GOLDEN=1 once"
    assert found == pins[name], (
        f"{name}: outputs differ from their golden pins. If the change is deliberate, update the "
        "pins, bump OUTPUT_VERSION and add a CHANGELOG entry in the same commit"
    )


@pytest.fixture
def at_root(monkeypatch):
    """Renders run from the repository root, so embedded image paths are relative to it (the
    same on every machine)."""
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset", PRESETS)
def test_renders_match_their_golden_pins(preset, backend, tmp_path, at_root):
    path = (GOLDEN / f"{preset}.yaml").relative_to(ROOT)
    code = main(
        [
            "render",
            str(path),
            "--out",
            str(tmp_path),
            "--quiet",
            "--backend",
            backend,
            "--device",
            device_of(backend),
        ]
    )
    assert code == 0
    found = file_digests(tmp_path)
    assert len(found) == 2, found
    loaded = load_preset(path)
    simulation = make_simulation(loaded, backend, torch.device(device_of(backend)))
    simulation.advance(loaded.run.steps)
    found["state"] = state_digest(simulation.state)
    check(preset, found)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sweeps_batch_matches_its_golden_pins(backend, tmp_path, at_root):
    path = (GOLDEN / "sweep.yaml").relative_to(ROOT)
    code = main(
        [
            "sweep",
            str(path),
            "--out",
            str(tmp_path),
            "--quiet",
            "--backend",
            backend,
            "--devices",
            device_of(backend),
            "--no-gallery",
        ]
    )
    assert code == 0
    found = file_digests(tmp_path)
    assert len(found) == 4, found
    check("sweep", found)


def test_the_plain_presets_mp4_and_webp_match_their_golden_pins(tmp_path, at_root):
    """The MP4 and WebP of the plain preset, rendered on the reference (their frames are those the
    GIF and PNG pins above hold on every backend): pinned for the pinned encoder builds."""
    path = (GOLDEN / "plain.yaml").relative_to(ROOT)
    flags = ["--quiet", "--backend", "torch", "--device", "cpu", "--set", "output.formats=[mp4, webp]"]
    assert main(["render", str(path), "--out", str(tmp_path), *flags]) == 0
    files = sorted(p for p in tmp_path.rglob("*") if p.suffix in (".mp4", ".webp"))
    found = {p.relative_to(tmp_path).as_posix(): sha256(p.read_bytes()) for p in files}
    assert len(found) == 2, found
    check("plain-encoded", found)
