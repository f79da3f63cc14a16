"""The world images a rendered file carries, so that `render --from FILE` renders it again with
no other file, on any machine (docs/outputs.md, "Carried images").

The embedded text of a preset that reads images is its preset text (render/preset/provenance.py) and
then this block, every line a YAML comment, so that the whole text is still the preset:

    # physarum images 1
    # image {"path": "walls.png", "width": 48, "height": 32, "sha256": "<64 hex>", "bytes": 412}
    # QlpoOTFBWSZTWf...                 (base64 of the data, 76 characters a line)
    # end

`1` is the block's format; a preset with a soundtrack (docs/audio.md) writes format 2, whose
entries may also be

    # audio {"path": "beat.flac", "fps": 30, "frames": 90, "features": [...], "bpm": "120",
    #        "offset": "1/4", "pcm_sha256": "<64 hex>", "samples": 66150, "sha256": "<64 hex>", "bytes": 321}
    # sound {"path": "beat.flac", "sha256": "<64 hex>", "bytes": 52000}

`audio`: the track's feature table (audio_features.Analysis: frames x features, 0 .. FULL) as
little-endian uint16, row by row, compressed by bzip2 (sha256 of the uncompressed table), so
that `render --from` follows the soundtrack without the sound file; `sound`: the sound file's
own bytes (not compressed), carried only with `audio.carry: true`, at most
audio.MAX_CARRIED_SOUND bytes, so that the MP4 carries the soundtrack again. One `image` entry per distinct path the preset names, in the order
images.preset_images names them; `path` is the path as the preset text names it. The image
itself is its canonical content: the 8-bit grey pixels the model reads from the file
(images.read_grey, before resizing to the canvas) as a binary PGM (`P5\\n<w> <h>\\n255\\n` and the
pixels row by row), whose sha256 is `sha256`; the data is that PGM compressed by bzip2 (level
9), `bytes` long. A preset with no images carries no block: its text is as before.

Reading a block back trusts nothing: the block is at most MAX_CARRIED_BYTES; each entry's data
is decoded (strict base64, its length checked) but decompressed only when the render needs its
pixels, after its width x height was checked against the canvas's pixel limit
(images.allowed_pixels), and then only up to the PGM's size; the PGM must be exactly the one its
header names and its sha256 must match.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import hashlib
import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from ..base import lazy
from ..base.files import parse_json
from ..base.inputs import excerpt
from .audio_features import FEATURES, FULL, Analysis
from .images import MAX_IMAGE_PIXELS, image_size, read_grey, remember

np = lazy.module("numpy")  # start-up: loaded at first use (base/lazy.py)

FORMAT = 1
AUDIO_FORMAT = 2  # a block that carries a soundtrack's features (and perhaps its sound)
MAX_TABLE_FRAMES = 200_000  # a carried feature table: at most this many frames
MARK = "# physarum images "  # at the start of a line: nothing in a YAML dump starts so at column 0
END = "# end"
FRACTION_TEXT = re.compile(r"-?[0-9]{1,30}(?:/[0-9]{1,30})?")  # a carried bpm or offset, as str(Fraction)
SHA256_TEXT = re.compile(r"[0-9a-f]{64}")
MAX_SAMPLES = 1 << 40  # a carried soundtrack's PCM samples (20 minutes at 22050 Hz are 26.5 million)
MAX_CARRIED_BYTES = 32 << 20  # the block, in characters: 32 MiB
MAX_PATH_CHARS = 4096
LINE_CHARS = 76
BZIP2_LEVEL = 9

_ENCODED: dict[tuple, bytes] = {}  # (sha256, width, height) -> compressed PGM


def pgm(grey: np.ndarray) -> bytes:
    """The canonical content of [H, W] uint8 grey pixels: a binary PGM."""
    height, width = grey.shape
    return _pgm_header(width, height) + np.ascontiguousarray(grey, dtype=np.uint8).tobytes()


def _pgm_header(width: int, height: int) -> bytes:
    return f"P5\n{width} {height}\n255\n".encode("ascii")


def block(images: list[tuple[str, np.ndarray]], sounds: list[CarriedAudio] = ()) -> str:
    """The carried block of (path as embedded, [H, W] uint8 grey) images and of a soundtrack's
    features (and sound); "" for none. ValueError when it would be longer than MAX_CARRIED_BYTES."""
    if not images and not sounds:
        return ""
    lines = [f"{MARK}{AUDIO_FORMAT if sounds else FORMAT}"]
    for path, grey in images:
        content = pgm(grey)
        digest = hashlib.sha256(content).hexdigest()
        height, width = grey.shape
        key = (digest, width, height)
        data = _ENCODED.get(key)
        if data is None:
            data = remember(_ENCODED, key, bz2.compress(content, BZIP2_LEVEL))
        header = {"path": path, "width": width, "height": height, "sha256": digest, "bytes": len(data)}
        lines.append(f"# image {json.dumps(header)}")
        text = base64.b64encode(data).decode("ascii")
        lines.extend(f"# {text[i : i + LINE_CHARS]}" for i in range(0, len(text), LINE_CHARS))
    for sound in sounds:
        lines.extend(sound.lines())
    lines.append(END)
    text = "\n".join(lines) + "\n"
    if len(text) > MAX_CARRIED_BYTES and sounds:
        raise ValueError(
            f"the world images and the soundtrack would take {len(text)} bytes in every output (in "
            f"base64); at most {MAX_CARRIED_BYTES} are carried: leave out audio.carry or shrink the images"
        )
    if len(text) > MAX_CARRIED_BYTES:
        raise ValueError(
            f"the world images would take {len(text)} bytes in every output (compressed, in base64); "
            f"at most {MAX_CARRIED_BYTES} are carried: shrink the images (their pixels: "
            + ", ".join(f"{path} {grey.shape[1]}x{grey.shape[0]}" for path, grey in images)
            + ")"
        )
    return text


def split(text: str) -> tuple[str, str | None]:
    """(preset text, carried block or None) of an embedded text."""
    if text.startswith(MARK):
        return "", text
    at = text.find("\n" + MARK)
    if at < 0:
        return text, None
    return text[: at + 1], text[at + 1 :]


@dataclass(frozen=True)
class CarriedImage:
    """An image a file carries: its path as the preset names it, its size, the sha256 of its PGM
    and the compressed PGM; `pixels()` decompresses and checks it, once."""

    path: str
    width: int
    height: int
    sha256: str
    data: bytes = field(repr=False)
    _grey: list = field(default_factory=list, compare=False, repr=False)

    def pixels(self) -> np.ndarray:
        """[H, W] uint8 grey; ValueError when the data is not the PGM the header names."""
        if not self._grey:
            self._grey.append(self._decoded())
        return self._grey[0]

    def _decoded(self) -> np.ndarray:
        where = f"the image {excerpt(self.path)} the file carries"
        header = _pgm_header(self.width, self.height)
        size = len(header) + self.width * self.height
        decompressor = bz2.BZ2Decompressor()
        try:
            content = decompressor.decompress(self.data, max_length=size + 1)
        except (OSError, ValueError, EOFError) as error:
            raise ValueError(f"{where} is damaged: its data is not bzip2 ({error})") from None
        if len(content) != size or not decompressor.eof or decompressor.unused_data:
            raise ValueError(
                f"{where} is damaged: its data is not the {self.width}x{self.height} image its header names"
            )
        if not content.startswith(header):
            raise ValueError(f"{where} is damaged: its data is not a {self.width}x{self.height} PGM")
        if hashlib.sha256(content).hexdigest() != self.sha256:
            raise ValueError(
                f"{where} does not match its sha256 {self.sha256}: the file was altered or damaged"
            )
        pixels = np.frombuffer(content, dtype=np.uint8, offset=len(header))
        return pixels.reshape(self.height, self.width)

    @property
    def cache_key(self) -> tuple:
        return ("carried", self.sha256, self.width, self.height)


@dataclass(frozen=True)
class FolderImage:
    """An image a carried preset names, read instead from the folder the user names with
    `render --from FILE --images DIR` (`file`: DIR / path, its header read when made)."""

    path: str
    file: Path
    width: int
    height: int

    @staticmethod
    def of(path: str, file: Path) -> FolderImage:
        """The image at `file`, its header read (ValueError naming the problem)."""
        width, height = image_size(str(file))
        return FolderImage(path, file, width, height)

    def pixels(self) -> np.ndarray:
        return read_grey(str(self.file))

    @property
    def cache_key(self) -> tuple:
        return ("folder", str(self.file), self.width, self.height)


def _base64_lines(data: bytes) -> list[str]:
    text = base64.b64encode(data).decode("ascii")
    return [f"# {text[i : i + LINE_CHARS]}" for i in range(0, len(text), LINE_CHARS)]


@dataclass(frozen=True)
class CarriedAudio:
    """A soundtrack an output carries: its path as the preset names it, its feature table
    (audio_features.Analysis) and, with audio.carry, the sound file's bytes."""

    path: str
    analysis: Analysis = field(repr=False)
    sound: bytes | None = field(default=None, repr=False)

    def lines(self) -> list[str]:
        table = np.ascontiguousarray(self.analysis.table, dtype="<u2").tobytes()
        data = bz2.compress(table, BZIP2_LEVEL)
        a = self.analysis
        header = {
            "path": self.path,
            "fps": a.fps,
            "frames": a.frames,
            "features": list(FEATURES),
            "bpm": None if a.bpm is None else str(a.bpm),
            "offset": str(a.offset),
            "pcm_sha256": a.pcm_sha256,
            "samples": a.samples,
            "sha256": hashlib.sha256(table).hexdigest(),
            "bytes": len(data),
        }
        lines = [f"# audio {json.dumps(header)}", *_base64_lines(data)]
        if self.sound is not None:
            sound = {
                "path": self.path,
                "sha256": hashlib.sha256(self.sound).hexdigest(),
                "bytes": len(self.sound),
            }
            lines += [f"# sound {json.dumps(sound)}", *_base64_lines(self.sound)]
        return lines


def read_block(text: str) -> dict[str, CarriedImage | CarriedAudio]:
    """The images a carried block holds, by path; ValueError naming what is wrong (line numbers
    count from the block's first line). Nothing is decompressed here."""
    if len(text) > MAX_CARRIED_BYTES:
        raise ValueError(
            f"the carried images and soundtrack are {len(text)} bytes; at most {MAX_CARRIED_BYTES} are read"
        )
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or not lines[0].startswith(MARK):
        raise ValueError(f"the carried images and soundtrack start with {MARK!r}")
    version = lines[0][len(MARK) :]
    if version not in (str(FORMAT), str(AUDIO_FORMAT)):
        raise ValueError(
            f"the carried images and soundtrack are in format {excerpt(version)}; this physarum reads "
            f"format {FORMAT} or {AUDIO_FORMAT}: render it with the release that wrote it, or give the "
            "images' folder with --images DIR and the sound file with --set audio.path=FILE"
        )
    if len(lines) < 2 or lines[-1] != END:
        raise ValueError(
            f"the carried images and soundtrack end before their last line {END!r}: the file was cut short"
        )
    images: dict[str, CarriedImage] = {}
    sounds: dict[str, CarriedAudio] = {}
    at = 1
    while at < len(lines) - 1:
        end = at + 1
        while end < len(lines) - 1 and not lines[end].startswith(ENTRY_STARTS):
            end += 1
        if version == str(AUDIO_FORMAT) and lines[at].startswith(("# audio ", "# sound ")):
            _read_audio_entry(lines, at, end, sounds)
            at = end
            continue
        header = _entry_header(lines[at], at + 1)
        data = _entry_data(lines[at + 1 : end], at + 2, header)
        if header["path"] in images:
            raise ValueError(f"line {at + 1}: the image {excerpt(header['path'])} is carried twice")
        images[header["path"]] = CarriedImage(
            header["path"], header["width"], header["height"], header["sha256"], data
        )
        at = end
    return {**images, **sounds}


ENTRY_STARTS = ("# image ", "# audio ", "# sound ")
AUDIO_KINDS = {
    "path": str,
    "fps": int,
    "frames": int,
    "features": list,
    "bpm": (str, type(None)),
    "offset": str,
    "pcm_sha256": (str, type(None)),
    "samples": int,
    "sha256": str,
    "bytes": int,
}
SOUND_KINDS = {"path": str, "sha256": str, "bytes": int}
HEADERS = {"audio": "soundtrack's features", "sound": "sound file's"}  # what messages call each entry


def _read_audio_entry(lines: list[str], at: int, end: int, sounds: dict) -> None:
    """One `# audio` (feature table) or `# sound` (the sound file) entry into `sounds`, by path;
    ValueError naming the line and what is wrong."""
    number = at + 1
    kind = lines[at][2:7]
    kinds = AUDIO_KINDS if kind == "audio" else SOUND_KINDS
    try:
        header = parse_json(lines[at][len("# audio ") :])
    except ValueError as error:
        raise ValueError(f"line {number}: the {HEADERS[kind]} header is not JSON ({error})") from None
    if not isinstance(header, dict) or set(header) != set(kinds):
        raise ValueError(
            f"line {number}: the {HEADERS[kind]} header has the keys {sorted(kinds)}, got {excerpt(header)}"
        )
    for key, types in kinds.items():
        if not isinstance(header[key], types) or isinstance(header[key], bool):
            raise ValueError(
                f"line {number}: the {HEADERS[kind]} header's {key} is of the wrong type: {excerpt(header)}"
            )
    path = header["path"]
    if not path or len(path) > MAX_PATH_CHARS or "\0" in path:
        raise ValueError(
            f"line {number}: a sound file's path has 1 to {MAX_PATH_CHARS} characters and no NUL"
        )
    data = _entry_data(lines[at + 1 : end], number + 1, header)
    if kind == "sound":
        if hashlib.sha256(data).hexdigest() != header["sha256"] or path not in sounds:
            raise ValueError(
                f"line {number}: the sound file {excerpt(path)} does not match its sha256, or comes before "
                "its soundtrack's features: the file was altered or damaged; give the sound file with "
                "--set audio.path=FILE"
            )
        sounds[path] = CarriedAudio(path, sounds[path].analysis, data)
        return
    if header["features"] != list(FEATURES):
        raise ValueError(
            f"line {number}: the soundtrack's features are {excerpt(header['features'])}; this physarum "
            f"reads {list(FEATURES)}: give the sound file (--set audio.path=FILE)"
        )
    frames = header["frames"]
    if not 1 <= frames <= MAX_TABLE_FRAMES or not 1 <= header["fps"] <= 100:
        raise ValueError(f"line {number}: a feature table has 1 to {MAX_TABLE_FRAMES} frames at 1 to 100 fps")
    size = frames * len(FEATURES) * 2
    decompressor = bz2.BZ2Decompressor()
    try:
        table = decompressor.decompress(data, max_length=size + 1)
    except (OSError, ValueError, EOFError) as error:
        raise ValueError(
            f"line {number}: the feature table of {excerpt(path)} is not bzip2 ({error})"
        ) from None
    if len(table) != size or not decompressor.eof or hashlib.sha256(table).hexdigest() != header["sha256"]:
        raise ValueError(
            f"line {number}: the feature table of {excerpt(path)} is not the one its header names: "
            "the file was altered or damaged"
        )
    values = np.frombuffer(table, dtype="<u2").reshape(frames, len(FEATURES)).astype(np.int64)
    if values.max() > FULL:
        raise ValueError(f"line {number}: the feature table of {excerpt(path)} has values above {FULL}")
    texts = [header["offset"]] + ([] if header["bpm"] is None else [header["bpm"]])
    if not all(FRACTION_TEXT.fullmatch(text) for text in texts):  # Fraction('1e99999999') takes minutes
        raise ValueError(
            f"line {number}: the soundtrack's bpm or offset is not a fraction as written here "
            f"(like '120' or '-7/32', at most 30 digits a side): {excerpt(texts)}"
        )
    try:
        bpm = None if header["bpm"] is None else Fraction(header["bpm"])
        offset = Fraction(header["offset"])
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"line {number}: the soundtrack's bpm or offset is not a number") from None
    if (bpm is not None and not 1 <= bpm <= 1000) or not -1 <= offset <= 100_000:
        raise ValueError(f"line {number}: the soundtrack's bpm or offset is out of bounds")
    digest = header["pcm_sha256"]
    if digest is not None and not SHA256_TEXT.fullmatch(digest) or not 0 <= header["samples"] <= MAX_SAMPLES:
        raise ValueError(
            f"line {number}: the soundtrack's pcm_sha256 is no 64 hex digits, or its samples are not "
            f"0 to {MAX_SAMPLES}"
        )
    if path in sounds:
        raise ValueError(f"line {number}: the soundtrack {excerpt(path)} is carried twice")
    analysis = Analysis(header["fps"], values, bpm, offset, header["pcm_sha256"], header["samples"])
    sounds[path] = CarriedAudio(path, analysis)


def _entry_header(line: str, number: int) -> dict:
    """The JSON header of one image entry, every field of the right type and within bounds."""
    if not line.startswith("# image "):
        raise ValueError(f"line {number}: expected '# image {{...}}', got {excerpt(line)}")
    try:
        header = parse_json(line[len("# image ") :])
    except ValueError as error:
        raise ValueError(f"line {number}: the image header is not JSON ({error}): {excerpt(line)}") from None
    kinds = {"path": str, "width": int, "height": int, "sha256": str, "bytes": int}
    if not isinstance(header, dict) or set(header) != set(kinds):
        raise ValueError(
            f"line {number}: an image header has the keys {sorted(kinds)}, got {excerpt(header)}"
        )
    for key, kind in kinds.items():
        if not isinstance(header[key], kind) or isinstance(header[key], bool):
            raise ValueError(
                f"line {number}: the image header's {key} is no {kind.__name__}: {excerpt(header)}"
            )
    width, height = header["width"], header["height"]
    if not header["path"] or len(header["path"]) > MAX_PATH_CHARS or "\0" in header["path"]:
        raise ValueError(
            f"line {number}: an image path has 1 to {MAX_PATH_CHARS} characters and no NUL "
            f"character, got {excerpt(header['path'])}"
        )
    if width < 1 or height < 1 or width * height > MAX_IMAGE_PIXELS:
        raise ValueError(
            f"line {number}: the image {excerpt(header['path'])} is {width}x{height} pixels; "
            f"an image has 1 to {MAX_IMAGE_PIXELS} pixels"
        )
    if len(header["sha256"]) != 64 or any(c not in "0123456789abcdef" for c in header["sha256"]):
        raise ValueError(f"line {number}: the sha256 of {excerpt(header['path'])} is not 64 hex digits")
    return header


def _entry_data(lines: list[str], number: int, header: dict) -> bytes:
    """The compressed data of one entry: its base64 lines, decoded strictly, `bytes` long."""
    if any(not line.startswith("# ") for line in lines):
        raise ValueError(f"line {number}: the data of {excerpt(header['path'])} has a line not starting '# '")
    try:
        data = base64.b64decode("".join(line[2:] for line in lines), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"line {number}: the data of {excerpt(header['path'])} is not base64") from None
    if len(data) != header["bytes"]:
        raise ValueError(
            f"line {number}: the data of {excerpt(header['path'])} is {len(data)} bytes, its header says "
            f"{header['bytes']}: the file was cut short or altered"
        )
    return data
