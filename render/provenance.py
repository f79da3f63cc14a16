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

from physarum.render import __version__
from physarum.render.preset import Preset

OUTPUT_VERSION = 2
# Each output version: the first release that renders it, and what it changed (CHANGELOG.md).
OUTPUT_VERSIONS = {
    1: ("0.1.0", "the model, spawning, colouring and encoders of the first release"),
    2: ("0.2.0", "outputs name their output version in the embedded header; frames and simulation as in 1"),
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
