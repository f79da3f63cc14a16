"""What every output carries so that it renders again: the resolved preset, and the versions
that made it.

Every GIF (comment), PNG (text chunk), MP4 (metadata) and JSON sidecar (preset_yaml) holds
`embedded_text(preset)`: a first line `# physarum <release>, output <N>`, then the resolved
preset as YAML; `physarum render --from FILE` reads it back (encode.read_embedded).

The output version N counts the changes that alter what a preset renders: any byte of a GIF,
PNG or MP4, or of the simulation's state. Files of one output version render again byte for byte
under any release of that version; CHANGELOG.md says what each version changed and
tests/test_golden.py pins the current version's outputs. Files of output version 1 name no
output version (their first line is `# physarum 0.1.0`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from physarum.render import __version__
from physarum.render.catalog import PRESETS
from physarum.render.inputs import excerpt
from physarum.render.preset import Preset
from physarum.render.preset.sections import IMAGE_KEYS

OUTPUT_VERSION = 2
# Each output version: the first release that renders it, and what it changed (CHANGELOG.md).
OUTPUT_VERSIONS = {
    1: ("0.1.0", "the model, spawning, colouring and encoders of the first release"),
    2: ("0.2.0", "outputs name their output version in the embedded header; frames and simulation as in 1"),
    3: ("0.3.0", "MP4s encoded with 16 x264 frame threads (4 sliced threads in 2): every MP4's bytes differ"),
}
HEADER = re.compile(r"# physarum (?P<release>[^\s,]+)(?:, output (?P<output>\d+))?\s*$")


def version() -> str:
    """The physarum release that outputs and sidecars name."""
    return __version__


def embedded_text(preset: Preset) -> str:
    """What every output carries: the header line, then the YAML preset `render --from` reads."""
    return f"# physarum {version()}, output {OUTPUT_VERSION}\n{preset.to_yaml()}"


@dataclass(frozen=True)
class Provenance:
    """The versions an embedded text names: the release that wrote it and its output version
    (None for both where the text has no physarum header)."""

    release: str | None
    output: int | None

    @staticmethod
    def of(text: str) -> Provenance:
        match = HEADER.match(text.split("\n", 1)[0])
        if match is None:
            return Provenance(None, None)
        return Provenance(match["release"], int(match["output"] or 1))


def version_note(text: str, source: str) -> str | None:
    """What `render --from` says about a file of another output version: that this release
    renders it differently and which release reproduces it byte for byte; None where the file
    is of this output version (or names none)."""
    found = Provenance.of(text)
    if found.output is None or found.output == OUTPUT_VERSION:
        return None
    if found.output > OUTPUT_VERSION:
        return (
            f"{source} was rendered by physarum {found.release} (output version {found.output}), "
            f"newer than this physarum {version()} (output version {OUTPUT_VERSION}); it may render "
            f"differently here: physarum {found.release} reproduces it byte for byte"
        )
    changes = "; ".join(f"{n}: {OUTPUT_VERSIONS[n][1]}" for n in range(found.output + 1, OUTPUT_VERSION + 1))
    release = OUTPUT_VERSIONS.get(found.output, (found.release,))[0]
    return (
        f"{source} is of output version {found.output} (physarum {found.release}); this physarum "
        f"{version()} renders output version {OUTPUT_VERSION}, which differs ({changes}): "
        f"physarum {release} reproduces the file byte for byte"
    )


def confinement_problems(data, source: str, cwd: Path, overridden: set[str] = frozenset()) -> list[str]:
    """Why the image paths of a preset carried by a shared file may not be read: a shared file
    may read only images under the folder it is rendered from (relative paths without '..',
    '~' or a link leading out), or the images that ship with physarum. Absolute and escaping
    paths are refused, so that a stranger's file cannot copy a local file into the outputs.
    Keys in `overridden` (the user's own --set) are the user's to name and are not checked."""
    shipped = PRESETS.folder()
    problems = []
    for key, value in _image_paths(data, ""):
        if key in overridden:
            continue
        path = Path(value)
        if path.is_absolute():
            inside = _under(path, shipped)
            why = None if inside else "is an absolute path"
        elif value.startswith("~") or ".." in path.parts:
            why = "leads out of the working folder"
        else:
            why = None if _under(cwd / path, cwd) else "leads out of the working folder (through a link)"
        if why:
            problems.append(
                f"{source}: {key}: the image path {excerpt(value)} {why}; a shared file may read only "
                f"images under the folder it is rendered from ({cwd}) or those that ship with "
                "physarum: copy the image there and name it by a relative path (--set "
                f"{key}=FILE), or render from a preset file you trust"
            )
    return problems


def _image_paths(node, where: str):
    """(dotted key, value) of every string under an image key, at any depth."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}.{key}" if where else str(key)
            if key in IMAGE_KEYS and isinstance(value, str):
                yield here, value
            else:
                yield from _image_paths(value, here)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _image_paths(value, f"{where}.{index}")


def _under(path: Path, folder: Path) -> bool:
    """Whether `path`, links resolved, lies inside `folder` (links resolved)."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False
