"""What every output carries so that it renders again: the resolved preset, and the versions
that made it.

Every GIF (comment), PNG (text chunk), MP4 (metadata) and JSON sidecar (preset_yaml) holds
`embedded_text(preset)`: a first line `# physarum <release>, output <N>`, then the resolved
preset as YAML, then, for a preset that reads images, the images themselves (render/preset/carried.py);
`physarum render --from FILE` reads it back (encode.read_embedded).

The output version N counts the changes that alter what a preset renders: any byte of a GIF,
PNG or MP4, or of the simulation's state. Files of one output version render again byte for byte
under any release of that version; CHANGELOG.md says what each version changed and
tests/test_golden.py pins the current version's outputs. Files of output version 1 name no
output version (their first line is `# physarum 0.1.0`).

The bytes of an MP4 and a WebP are also those of the encoder builds that wrote them (libx264 in
PyAV's wheel, libwebp in Pillow's), which pyproject.toml pins; the sidecar records them
(`encoder_builds`) and `render --from` says when a file's sidecar names other builds
(`builds_note`; docs/outputs.md, "Which bytes are promised").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .. import __version__
from ..base import lazy
from ..base.errors import PresetError, RenderError, printable
from ..base.inputs import excerpt, shorten
from . import Preset, carried, parse_yaml
from . import audio as soundtrack
from .catalog import PRESETS
from .images import preset_images, source_pixels
from .sections import IMAGE_KEYS

# start-up: loaded at first use (base/lazy.py)
av = lazy.module("av")
np = lazy.module("numpy")
PIL = lazy.module("PIL")
features = lazy.module("PIL.features")

OUTPUT_VERSION = 3
# Each output version: the first release that renders it, and what it changed (CHANGELOG.md).
OUTPUT_VERSIONS = {
    1: ("0.1.0", "the model, spawning, colouring and encoders of the first release"),
    2: ("0.2.0", "outputs name their output version in the embedded header; frames and simulation as in 1"),
    3: (
        "0.3.0",
        "outputs of presets that read images carry those images after the preset text; MP4s "
        "encoded with 16 x264 frame threads (4 sliced threads in 2): every MP4's bytes differ; "
        "frames and simulation as in 2",
    ),
}
HEADER = re.compile(r"# physarum (?P<release>[^\s,]+)(?:, output (?P<output>\d+))?\s*$")
# Each encoder build the sidecar records, and the formats whose bytes it writes.
BUILDS = {
    "av": ("mp4",),
    "libavcodec": ("mp4",),
    "libavformat": ("mp4",),
    "libx264": ("mp4",),
    "pillow": ("gif", "png", "webp"),
    "libwebp": ("webp",),
    "zlib": ("png",),
}
X264_CORE = re.compile(rb"x264 - core \d+(?: r\d+ [0-9a-f]+)?")


def version() -> str:
    """The physarum release that outputs and sidecars name."""
    return __version__


def embedded_text(preset: Preset) -> str:
    """What every output carries: the header line, the YAML preset `render --from` reads, and the
    images it reads (carried.block; nothing for a preset without images). RenderError when the
    images take more than carried.MAX_CARRIED_BYTES, or when `render --from` could not read the
    preset text back (check_readable)."""
    text = check_readable(preset)
    try:
        return text + carried.block(carried_images(preset), carried_sounds(preset))
    except ValueError as error:
        raise RenderError(f"{preset.name}: {error}") from None


def carried_sounds(preset: Preset) -> list[carried.CarriedAudio]:
    """The soundtrack a preset's outputs carry (docs/audio.md): the feature table of its sound
    file, and with audio.carry the file's bytes (at most audio.MAX_CARRIED_SOUND); none without
    a sound file. RenderError where the features cannot be read or the file is too large."""
    audio = preset.audio
    if audio is None or audio.path is None:
        return []
    try:
        analysis = soundtrack.analysis_of(preset)
        sound = soundtrack.sound_bytes(preset) if audio.carry else None
    except (ValueError, OSError) as error:
        raise RenderError(f"{preset.name}: audio.path: {printable(error)}") from None
    if sound is not None and len(sound) > soundtrack.MAX_CARRIED_SOUND:
        raise RenderError(
            f"{preset.name}: audio.carry: the sound file is {len(sound)} bytes; outputs carry at most "
            f"{soundtrack.MAX_CARRIED_SOUND} ({soundtrack.MAX_CARRIED_SOUND >> 20} MiB): leave out "
            "audio.carry (outputs carry the features, which render --from follows) or shorten the file"
        )
    return [carried.CarriedAudio(preset.portable_path(audio.path), analysis, sound)]


def check_readable(preset: Preset) -> str:
    """The header and preset text every output of `preset` embeds; RenderError where `render
    --from` could not read it back: its YAML past the loader's limits once aliases are written
    out whole (a preset whose aliases expand beyond MAX_TEXT_BYTES or MAX_NODES). `physarum
    render` calls it before anything is written (run/reload.py)."""
    text = f"# physarum {version()}, output {OUTPUT_VERSION}\n{preset.to_yaml()}"
    problem = _readable_problem(text)
    if problem:
        raise RenderError(
            f"{preset.name}: the preset text its outputs would embed is past what render --from "
            f"reads ({problem}): a preset's YAML aliases are written out whole in every output; "
            "name fewer values through aliases (shorter or fewer schedules)"
        )
    return text


@lru_cache(maxsize=8)
def _readable_problem(text: str) -> str | None:
    """Why the loader refuses `text` (its message without the source), or None. Cached: a render
    embeds one text in every output."""
    try:
        parse_yaml(text, "")
    except PresetError as error:
        return error.problems[0].removeprefix(": ")
    return None


def carried_images(preset: Preset) -> list[tuple[str, object]]:
    """(path as embedded, [h, w] uint8 grey as read) of every distinct image a preset reads, in
    the order images.preset_images names them."""
    images: dict[str, object] = {}
    for where, path in preset_images(preset):
        embedded = preset.portable_path(path)
        pixels = source_pixels(preset, path)
        if embedded in images and not np.array_equal(images[embedded], pixels):
            raise RenderError(  # a --set path that dumps as one a --from file carries, another image
                f"{where}: the image {excerpt(path)} would be embedded as {excerpt(embedded)}, the name "
                "of another image this render reads: name it by another path"
            )
        images.setdefault(embedded, pixels)
    return list(images.items())


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
    is of this output version (or names none). The release a file names is a stranger's text:
    it is quoted cut to 40 characters, and the note is printable (errors.printable)."""
    found = Provenance.of(text)
    if found.output is None or found.output == OUTPUT_VERSION:
        return None
    named = shorten(found.release, 40)
    if found.output > OUTPUT_VERSION:
        return printable(
            f"{source} was rendered by physarum {named} (output version {found.output}), "
            f"newer than this physarum {version()} (output version {OUTPUT_VERSION}); it may render "
            f"differently here: physarum {named} reproduces it byte for byte"
        )
    changes = "; ".join(f"{n}: {OUTPUT_VERSIONS[n][1]}" for n in range(found.output + 1, OUTPUT_VERSION + 1))
    release = OUTPUT_VERSIONS.get(found.output, (named,))[0]
    return printable(
        f"{source} is of output version {found.output} (physarum {named}); this physarum "
        f"{version()} renders output version {OUTPUT_VERSION}, which differs ({changes}): "
        f"physarum {release} reproduces the file byte for byte"
    )


@lru_cache(maxsize=1)
def encoder_builds() -> dict[str, str]:
    """The builds of the encoders this install writes files with, by the names of BUILDS: PyAV,
    the libavcodec and libavformat its wheel bundles and the libx264 core they encode MP4s with;
    Pillow (GIF and PNG files, WebP muxing) and the libwebp and zlib its wheel bundles. Every
    sidecar records them ("encoders"). Cached: one process has one build of each."""
    libraries = getattr(av, "library_versions", {})
    return {
        "av": av.__version__,
        "libavcodec": ".".join(map(str, libraries.get("libavcodec", ()))) or "unknown",
        "libavformat": ".".join(map(str, libraries.get("libavformat", ()))) or "unknown",
        "libx264": _x264_core(),
        "pillow": PIL.__version__,
        "libwebp": features.version("webp") or "none",
        "zlib": features.version("zlib") or "none",
    }


def _x264_core() -> str:
    """The libx264 build PyAV encodes with, as x264 names itself in every stream it writes
    ('core 165', with its revision where the build names one): one 16x16 frame encoded in
    memory (a few milliseconds); 'unknown' where libx264 cannot encode."""
    try:
        codec = av.CodecContext.create("libx264", "w")
        codec.width, codec.height, codec.pix_fmt = 16, 16, "yuv420p"
        codec.options = {"threads": "1"}
        packets = [*codec.encode(av.VideoFrame(16, 16, "yuv420p")), *codec.encode(None)]
    except Exception:  # no libx264 in this build: the MP4 writer says so when asked for one
        return "unknown"
    found = X264_CORE.search(b"".join(bytes(packet) for packet in packets))
    return found.group(0).decode("ascii")[len("x264 - ") :] if found else "unknown"


def builds_note(recorded, source: str) -> str | None:
    """What `render --from` says when the sidecar `source` records (its "encoders") other encoder
    builds than this install's: which builds differ, and which formats this render may write
    with other bytes than the files the sidecar describes; None where the builds it names match
    (or it names none). The sidecar is a stranger's text: only the keys of BUILDS are read,
    each value quoted cut to 40 characters, and the note is printable."""
    if not isinstance(recorded, dict):
        return None
    here = encoder_builds()
    differ = [key for key in BUILDS if isinstance(recorded.get(key), str) and recorded[key] != here[key]]
    if not differ:
        return None
    names = {"gif": "GIF", "mp4": "MP4", "webp": "WebP", "png": "PNG"}
    formats = [name for fmt, name in names.items() if any(fmt in BUILDS[key] for key in differ)]
    formats = " and ".join(filter(None, (", ".join(formats[:-1]), formats[-1])))
    builds = ", ".join(f"{key} {shorten(recorded[key], 40)} (here {here[key]})" for key in differ)
    return printable(
        f"{source} records other encoder builds than this install's: {builds}; the "
        f"{formats} this render writes may differ from the files "
        'it describes (the frames are the same; docs/outputs.md, "Which bytes are promised")'
    )


def confinement_problems(data, source: str, folder: Path, overridden: set[str] = frozenset()) -> list[str]:
    """Why the image paths of a preset carried by a shared file may not be read from `folder`
    (`render --from FILE --images DIR`): a shared file may read only images under that folder
    (relative paths without '..', '~' or a link leading out), or the images that ship with
    physarum. Absolute and escaping paths are refused, so that a stranger's file cannot copy a
    local file into the outputs. Keys in `overridden` (the user's own --set) are the user's to
    name and are not checked."""
    problems = []
    for key, value in image_paths(data, overridden):
        path = Path(value)
        if path.is_absolute():
            why = None if is_shipped(value) else "is an absolute path"
        elif value.startswith("~") or ".." in path.parts:
            why = "leads out of the --images folder"
        else:
            why = (
                None if _under(folder / path, folder) else "leads out of the --images folder (through a link)"
            )
        if why:
            problems.append(
                f"{source}: {key}: the image path {excerpt(value)} {why}; --images reads only images "
                f"under its folder ({folder}) or those that ship with physarum: copy the image there "
                f"and name it by a relative path (--set {key}=FILE), or render from a preset file you trust"
            )
    return problems


def image_paths(data, overridden: set[str] = frozenset()) -> list[tuple[str, str]]:
    """(dotted key, path) of every image path of raw preset data but the keys in `overridden`."""
    return [(key, value) for key, value in _image_paths(data, "") if key not in overridden]


def is_shipped(value: str) -> bool:
    """Whether an image path names one of the images that ship with physarum (by absolute path)."""
    return Path(value).is_absolute() and _under(Path(value), PRESETS.folder())


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
    except (OSError, RuntimeError, ValueError):  # a link loop; a path the OS refuses (NUL, no UTF-8)
        return False
