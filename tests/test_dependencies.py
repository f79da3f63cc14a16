"""The encoders are pinned, and the pinned builds are the ones installed.

MP4 bytes are those of the libx264 in PyAV's wheel and WebP bytes those of the libwebp in
Pillow's (GIF and PNG are written through Pillow too), so pyproject.toml names each by one exact
version (docs/outputs.md, "Which bytes are promised"). These tests fail when a range admits
another build (CI would then install whatever is newest), or when the environment that runs the
golden pins (tests/test_golden.py) has another build than the one pinned.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import av
import PIL
import pytest

from physarum.render.preset.provenance import BUILDS, encoder_builds

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
ENCODERS = {"av": av.__version__, "pillow": PIL.__version__}  # distribution -> version imported
EXACT = re.compile(r"(?P<name>[A-Za-z0-9_.-]+)\s*==\s*(?P<version>[0-9][0-9A-Za-z.+-]*)\s*(;.*)?")


def declared() -> dict[str, str]:
    """Each requirement of [project] dependencies, by lower-case distribution name."""
    requirements = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    return {re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0].lower(): req for req in requirements}


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_each_encoder_is_pinned_to_one_exact_version(name):
    requirement = declared().get(name)
    assert requirement is not None, f"pyproject.toml declares no {name}"
    match = EXACT.fullmatch(requirement)
    assert match is not None, (
        f"pyproject.toml: {requirement!r} admits more than one build of {name}; pin it (name==X.Y.Z): "
        "another build writes other MP4/WebP bytes"
    )


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_the_installed_encoder_is_the_pinned_one(name):
    pinned = EXACT.fullmatch(declared()[name])["version"]
    assert metadata.version(name) == pinned, (
        f"{name} {metadata.version(name)} is installed but pyproject.toml pins {pinned}: "
        "pip install -e . again"
    )
    assert ENCODERS[name] == pinned, f"{name} imported is {ENCODERS[name]}, pinned {pinned}"


def test_the_builds_a_sidecar_records_name_this_install():
    builds = encoder_builds()
    assert set(builds) == set(BUILDS)
    assert builds["av"] == av.__version__ and builds["pillow"] == PIL.__version__
    assert re.fullmatch(r"core \d+( r\d+ [0-9a-f]+)?", builds["libx264"]), builds["libx264"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", builds["libavcodec"]), builds["libavcodec"]
    assert builds["libwebp"] not in ("none", "unknown")  # the WebP writer needs it
