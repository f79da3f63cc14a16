"""Print stills (output.still): the last frame in 16 bits a channel (render/look/still.py) at
output.still.scale times the canvas, as a 16-bit PNG and an uncompressed 16-bit TIFF, each with an
sRGB ICC profile (Pillow's ImageCms.createProfile("sRGB"), its creation date fixed so the bytes
repeat) and the print resolution (output.still.dpi), and as an EXR of the linear light before the
tone curve (FFmpeg's exr encoder through PyAV: one float32 Y channel, 1.0 the white level; only
with a look section, which is what has a linear light).

The size is an exact upscale: each pixel repeated scale x scale times (no new detail invented,
the picture exactly as rendered, the same on every machine); `physarum still` (render/commands/
still.py) asks for any size of at least the frame's, each output pixel the frame's pixel under
it (row i of H' takes row i * H // H': nearest, in integers; a whole scale is the same as
repeating). Simulating at the print size is a
different picture: the model's distances are in cells, so a larger canvas grows a finer network;
a preset enlarged for print (canvas, agents and distances scaled, as `--reduce` does the other
way) is rendered like any other, its still at scale 1. The memory a still takes is checked before
the render (check): refused with the largest scale that fits. Beyond memory, each file has its
own limit (format_fits): a classic TIFF's offsets hold under 4 GiB, and FFmpeg opens no
picture whose (8 * width + 1024) * (height + 128) reaches 2^31 (av_image_check_size; the exr
encoder checks it as if 8 bytes a pixel: 16255 x 16255 is the largest square EXR).

PNG and TIFF are written here, not by Pillow, which writes no 16-bit RGB: the PNG's pixels
deflated by Python's zlib (its bytes follow the zlib the interpreter links; the pixels do not),
the TIFF uncompressed (the same bytes everywhere). Not a format of output.formats (no FORMAT): a
key asks for it, and its files sit beside the outputs: <stem>-still.png, .tiff, .exr, named
among a render's outputs (RenderResult.outputs, the sidecar's `outputs`, the printed list) as
"still.png", "still.tiff" and "still.exr" (still_key). The EXR carries no preset: FFmpeg's exr
encoder writes a fixed header (channels, compression, windows, lineOrder, gamma, writer "lavc")
and takes no attribute from its caller, so `render --from` reads the PNG's or the TIFF's."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..base import lazy
from ..base.errors import RenderError
from ..base.files import PartialFile, commit_together
from .contract import Frame
from .png import EMBED_KEY

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")
av = lazy.module("av")
ImageCms = lazy.module("PIL.ImageCms")

STILL_FORMATS = ("png", "tiff", "exr")
ICC_DATE = struct.pack(">6H", 2026, 1, 1, 0, 0, 0)  # the profile's creation date, fixed
BYTES_PER_PIXEL = 6 + 6 + 8 + 4 + 4  # 16-bit RGB (twice: upscaled, a file's copy), int64 rows, light
ROWS_PER_BLOCK = 256  # the PNG's rows deflated at once
TIFF_MAX_BYTES = 2**32 - 2**20  # a classic TIFF's 32-bit offsets, less room for its tags
FFMPEG_MAX = 2**31 - 1  # av_image_check_size: (8 * width + 1024) * (height + 128) below this


def srgb_profile() -> bytes:
    """The sRGB ICC profile littleCMS makes, its creation date fixed (bytes 24 .. 35)."""
    profile = bytearray(ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    profile[24:36] = ICC_DATE
    return bytes(profile)


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png16(colour: np.ndarray, comment: str, dpi: int | None, icc: bytes) -> bytes:
    """A 16-bit RGB PNG of colour [H, W, 3] uint16: iCCP, pHYs (dpi), the preset's iTXt, IDAT."""
    height, width = colour.shape[:2]
    parts = [b"\x89PNG\r\n\x1a\n", chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0))]
    parts.append(chunk(b"iCCP", b"sRGB\x00\x00" + zlib.compress(icc, 9)))
    if dpi is not None:
        per_metre = round(dpi / 0.0254)
        parts.append(chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)))
    parts.append(chunk(b"iTXt", EMBED_KEY.encode() + b"\x00\x00\x00\x00\x00" + comment.encode("utf-8")))
    deflate = zlib.compressobj(6)
    data = []
    for top in range(0, height, ROWS_PER_BLOCK):
        rows = colour[top : top + ROWS_PER_BLOCK].astype(">u2").reshape(-1, width * 3)
        block = np.concatenate((np.zeros((len(rows), 1), np.uint8), rows.view(np.uint8)), axis=1)
        data.append(deflate.compress(block.tobytes()))
    data.append(deflate.flush())
    parts += [chunk(b"IDAT", b"".join(data)), chunk(b"IEND", b"")]
    return b"".join(parts)


def tiff16(colour: np.ndarray, comment: str, dpi: int | None, icc: bytes) -> bytes:
    """An uncompressed little-endian 16-bit RGB TIFF of colour [H, W, 3] uint16, one strip: the
    resolution (dpi, or 72), the ICC profile (tag 34675) and the preset in XMP (tag 700)."""
    height, width = colour.shape[:2]
    pixels = colour.astype("<u2").tobytes()
    xmp = comment.encode("utf-8")
    resolution = dpi or 72
    header = 8
    entries = []  # (tag, type, count, value or bytes)
    extra = bytearray()
    count = 14
    ifd_size = 2 + count * 12 + 4
    base = header + ifd_size

    def out_of_line(data: bytes) -> int:
        nonlocal extra
        offset = base + len(extra)
        extra += data + (b"\x00" if len(data) % 2 else b"")
        return offset

    bits = out_of_line(struct.pack("<3H", 16, 16, 16))
    xres = out_of_line(struct.pack("<II", resolution, 1))
    yres = out_of_line(struct.pack("<II", resolution, 1))
    icc_at = out_of_line(icc)
    xmp_at = out_of_line(xmp)
    pixels_at = base + len(extra)
    entries = [
        (256, 4, 1, width),
        (257, 4, 1, height),
        (258, 3, 3, bits),
        (259, 3, 1, 1),  # no compression
        (262, 3, 1, 2),  # RGB
        (273, 4, 1, pixels_at),
        (277, 3, 1, 3),
        (278, 4, 1, height),
        (279, 4, 1, len(pixels)),
        (282, 5, 1, xres),
        (283, 5, 1, yres),
        (296, 3, 1, 2),  # inches
        (700, 1, len(xmp), xmp_at),
        (34675, 7, len(icc), icc_at),
    ]
    ifd = struct.pack("<H", len(entries))
    for tag, kind, n, value in entries:
        if kind == 3 and n == 1:
            ifd += struct.pack("<HHIHH", tag, kind, n, value, 0)
        else:
            ifd += struct.pack("<HHII", tag, kind, n, value)
    ifd += struct.pack("<I", 0)
    return b"II*\x00" + struct.pack("<I", header) + ifd + bytes(extra) + pixels


XMP_TAG = 700
MAX_TIFF_ENTRIES = 64  # a still's TIFF has 14


def read_tiff_text(path: Path, limit: int) -> str:
    """The preset a still's TIFF carries (its XMP tag, tiff16), read from a file trusted in
    nothing: the header and first IFD read by hand (Pillow would read every tag's data whole),
    the tag's length checked against `limit` before its bytes are read; ValueError naming what
    is wrong."""
    with open(path, "rb") as file:
        head = file.read(8)
        if len(head) < 8 or head[:4] not in (b"II*\x00", b"MM\x00*"):
            raise ValueError("not a TIFF (no II*/MM* header)")
        order = "<" if head[:2] == b"II" else ">"
        file.seek(struct.unpack(order + "I", head[4:])[0])
        (count,) = struct.unpack(order + "H", file.read(2).rjust(2, b"\x00"))
        if count > MAX_TIFF_ENTRIES:
            raise ValueError(
                f"its first IFD has {count} entries; a still's TIFF has at most {MAX_TIFF_ENTRIES}"
            )
        table = file.read(12 * count)
        for at in range(0, len(table) - 11, 12):
            tag, kind, length, offset = struct.unpack(order + "HHII", table[at : at + 12])
            if tag != XMP_TAG or kind not in (1, 7):
                continue
            if length > limit:
                raise ValueError(f"its XMP tag is {length} bytes; at most {limit} are read")
            if length <= 4:
                data = table[at + 8 : at + 8 + length]
            else:
                file.seek(offset)
                data = file.read(length)
            if len(data) != length:
                raise ValueError("its XMP tag runs past the file's end: the file was cut short")
            return data.decode("utf-8")
    raise ValueError("it has no XMP tag (the preset a still's TIFF carries)")


def exr(light: np.ndarray) -> bytes:
    """An EXR of light [H, W] float32 (one Y channel, float, zip16), by FFmpeg's exr encoder."""
    codec = av.CodecContext.create("exr", "w")
    codec.width, codec.height, codec.pix_fmt = light.shape[1], light.shape[0], "grayf32le"
    codec.time_base = 1
    codec.options = {"compression": "zip16", "format": "float"}
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(light, dtype="<f4"), format="grayf32le")
    return b"".join(bytes(packet) for packet in [*codec.encode(frame), *codec.encode(None)])


STILL_KEY = "still."  # what a still's output name starts with


def still_key(fmt: str) -> str:
    """The name a still's file of format `fmt` has among a render's outputs: "still.<fmt>"."""
    return f"{STILL_KEY}{fmt}"


def is_still_key(key: str) -> bool:
    """Whether an output name (a key of RenderResult.outputs) is a print still's."""
    return key.startswith(STILL_KEY)


def still_file(folder: Path, stem: str, fmt: str) -> Path:
    """Where a render's still of format `fmt` goes: FOLDER/<stem>-still.<fmt>."""
    return Path(folder) / f"{stem}-still.{fmt}"


def still_paths(folder: Path, stem: str, formats) -> dict[str, Path]:
    """The still's files a render writes, by output name (still_key), in `formats`' order:
    `formats` are those written (written_formats)."""
    return {still_key(fmt): still_file(folder, stem, fmt) for fmt in formats}


@dataclass(frozen=True)
class StillSpec:
    """The print still of a render: folder, stem, the preset text, scale, dpi, formats (those
    written: written_formats)."""

    folder: Path
    stem: str
    comment: str
    scale: int
    dpi: int | None
    formats: tuple[str, ...]

    format: ClassVar[str] = "still"
    reads: ClassVar[str] = "last_still"

    @property
    def path(self) -> Path:
        return still_file(self.folder, self.stem, self.formats[0])

    def open(self) -> StillWriter:
        return StillWriter(self)


def enlarge(picture: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """picture [H, W, ...] at size (width, height), each pixel the one under it: row i takes
    row i * H // height, column j column j * W // width (exact integers; a whole scale k
    repeats each pixel k x k times)."""
    height, width = picture.shape[:2]
    if size == (width, height):
        return picture
    rows = np.arange(size[1], dtype=np.int64) * height // size[1]
    cols = np.arange(size[0], dtype=np.int64) * width // size[0]
    return picture[rows[:, None], cols[None, :]]


def format_fits(fmt: str, width: int, height: int) -> bool:
    """Whether a width x height still can be written as `fmt` at all (memory aside)."""
    if fmt == "tiff":
        return width * height * 6 <= TIFF_MAX_BYTES
    if fmt == "exr":
        return (8 * width + 1024) * (height + 128) < FFMPEG_MAX
    return width < 2**31 and height < 2**31


def still_files(
    colour: np.ndarray,
    light: np.ndarray | None,
    size: tuple[int, int],
    files: dict[str, Path],
    comment: str,
    dpi: int | None,
) -> list[PartialFile]:
    """The still's files, each a PartialFile to commit: colour [H, W, 3] uint16 and light [H, W]
    float32 (or None: no EXR) at size; files: the path of each format (png, tiff, exr)."""
    big = enlarge(colour, size)
    icc = srgb_profile()
    partials = []
    try:
        for fmt, path in files.items():
            if fmt == "exr" and light is None:
                continue
            partial = PartialFile(Path(path))
            partials.append(partial)
            with partial.open("wb") as file:
                if fmt == "png":
                    file.write(png16(big, comment, dpi, icc))
                elif fmt == "tiff":
                    file.write(tiff16(big, comment, dpi, icc))
                else:
                    file.write(exr(enlarge(light, size)))
    except BaseException:
        for partial in partials:
            partial.abort()
        raise
    return partials


class StillWriter:
    """Keeps the last frame's 16-bit colour and light (Frame.still), writes the files at the end."""

    def __init__(self, spec: StillSpec):
        self.spec, self.path = spec, spec.path
        self.colour = self.light = None
        self.partials: list[PartialFile] = []

    def write(self, frame: Frame) -> None:
        if frame.still is None or frame.replay:
            return
        colour, light = frame.still
        self.colour = colour.copy()
        self.light = None if light is None else light.copy()

    def complete(self) -> list[PartialFile]:
        spec, k = self.spec, self.spec.scale
        height, width = self.colour.shape[:2]
        files = {fmt: still_file(spec.folder, spec.stem, fmt) for fmt in spec.formats}
        self.partials = still_files(
            self.colour, self.light, (width * k, height * k), files, spec.comment, spec.dpi
        )
        return list(self.partials)

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        for partial in self.partials:
            partial.abort()


def host_available() -> int:
    """The host's available memory in bytes (MemAvailable; elsewhere the physical memory)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import os

    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def still_bytes(width: int, height: int, scale: int = 1) -> int:
    """The memory a still of a width x height frame at `scale` takes at most (BYTES_PER_PIXEL a
    pixel of the print, and a file's bytes)."""
    return width * height * scale * scale * BYTES_PER_PIXEL


def still_fits(width: int, height: int, formats, available: int) -> bool:
    """Whether a width x height still fits the host's `available` memory and every file of
    `formats` (format_fits)."""
    return still_bytes(width, height) <= available and all(format_fits(f, width, height) for f in formats)


def size_problem(width: int, height: int, formats, available: int) -> str:
    """Why a width x height still does not fit (still_fits false): the memory, or the format."""
    need = still_bytes(width, height)
    if need > available:
        return (
            f"a {width}x{height} still takes about {need / 2**30:.1f} GiB of memory, "
            f"{available / 2**30:.1f} GiB are free"
        )
    refused = next(f for f in formats if not format_fits(f, width, height))
    why = "a classic TIFF holds under 4 GiB" if refused == "tiff" else "FFmpeg opens no larger EXR"
    return f"a {width}x{height} still cannot be written as {refused} ({why})"


def check_kind(preset, key: str = "output.still") -> None:
    """Refuse (RenderError) a still of a preset with no single light (3D, species, heading)."""
    if preset.dims == 3 or preset.species is not None or preset.palette.layer == "heading":
        raise RenderError(f"{preset.name}: {key} is for a 2D trail's frames (no 3D, species or heading)")


def written_formats(preset, formats) -> list[str]:
    """The formats of a still that are written: no EXR without a look (no linear light)."""
    return [f for f in formats if f != "exr" or preset.look is not None]


def check_still(preset, available: int) -> list[str]:
    """Refuse (RenderError) a still the host's `available` memory or its files cannot hold,
    naming the largest scale that fits, or one of a preset with no single light (3D, species,
    heading); note what it writes."""
    still = preset.output.still
    if still is None:
        return []
    check_kind(preset)
    width, height = preset.frame_size
    formats = written_formats(preset, still.formats)
    if not still_fits(width * still.scale, height * still.scale, formats, available):
        problem = size_problem(width * still.scale, height * still.scale, formats, available)
        fits = max(
            (k for k in range(1, still.scale) if still_fits(width * k, height * k, formats, available)),
            default=0,
        )
        advice = f"at most output.still.scale {fits}" if fits else "no still fits"
        raise RenderError(f"{preset.name}: {problem}: {advice}")
    skipped = (
        " (no exr: without a look section there is no linear light)"
        if len(formats) < len(still.formats)
        else ""
    )
    size = f"{width * still.scale}x{height * still.scale}"
    return [f"still: {size} (x{still.scale}, pixels repeated) as {', '.join(formats)}{skipped}"]
