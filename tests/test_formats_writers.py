"""Encoders, read back by independent readers: FFmpeg's decoders (through PyAV) for pixels and a
hand-written block parser for GIF and PNG metadata."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from physarum.render.formats import mp4
from physarum.render.formats.contract import Frame
from physarum.render.formats.gif import GifSpec, GifWriter
from physarum.render.formats.mp4 import MP4_SETTINGS, Mp4Spec, Mp4Writer
from physarum.render.formats.png import PngSpec, PngWriter
from physarum.render.formats.registry import open_writer, read_embedded
from physarum.render.formats.webp import WebpSpec, WebpWriter
from physarum.render.look.palette import palette_table
from physarum.render.preset import MP4_SETTINGS as PRESET_MP4_SETTINGS

COMMENT = "# physarum test\nname: tiny\nseed: 3\n" + "x" * 600  # longer than one GIF sub-block


def parse_gif(path: Path) -> dict:
    """Blocks of a GIF file: size, global table, loop, comment, and per frame delay and table."""
    data = path.read_bytes()
    assert data[:6] == b"GIF89a"
    width, height, packed = struct.unpack("<HHB", data[6:11])
    at, result = 13, {"size": (width, height), "frames": [], "loop": None, "comment": b""}
    if packed & 0x80:
        size = 3 << ((packed & 7) + 1)
        result["global"], at = data[at : at + size], at + size
    delay = None
    while data[at] != 0x3B:
        kind = data[at]
        if kind == 0x21:
            label, at = data[at + 1], at + 2
            blocks = []
            while data[at]:
                blocks.append(data[at + 1 : at + 1 + data[at]])
                at += 1 + data[at]
            at += 1
            if label == 0xF9:
                delay = struct.unpack("<H", blocks[0][1:3])[0]
            elif label == 0xFF and blocks[0] == b"NETSCAPE2.0":
                result["loop"] = struct.unpack("<H", blocks[1][1:3])[0]
            elif label == 0xFE:
                result["comment"] += b"".join(blocks)
        elif kind == 0x2C:
            flags, at = data[at + 9], at + 10
            table = None
            if flags & 0x80:
                size = 3 << ((flags & 7) + 1)
                table, at = data[at : at + size], at + size
            at += 1  # LZW minimum code size
            while data[at]:
                at += 1 + data[at]
            at += 1
            result["frames"].append({"delay": delay, "table": table})
        else:
            raise AssertionError(f"unexpected GIF block {kind:#x} at {at}")
    return result


def png_chunks(path: Path) -> dict[bytes, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        body = data[at + 8 : at + 8 + length]
        assert zlib.crc32(kind + body) == struct.unpack(">I", data[at + 8 + length : at + 12 + length])[0]
        chunks[kind] = body
        at += 12 + length
    return chunks


def decoded_frames(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def index_frames(count: int, height: int = 21, width: int = 34) -> list[np.ndarray]:
    rng = np.random.default_rng(4)
    return [rng.integers(0, 256, (height, width), dtype=np.uint8) for _ in range(count)]


def test_gif_exact_palette_loop_duration_comment(tmp_path):
    path = tmp_path / "a.gif"
    magma, ice = palette_table("magma"), palette_table("ice")
    frames, tables = index_frames(5), [magma, magma, ice, ice, magma]
    writer = GifWriter(GifSpec(path, 34, 21, fps=25, loop=3, comment=COMMENT, palette=magma.tobytes()))
    for number, (index, table) in enumerate(zip(frames, tables)):
        writer.write(Frame(number, preview=index, palette=table))
    writer.commit()

    blocks = parse_gif(path)
    assert blocks["size"] == (34, 21) and blocks["loop"] == 3
    assert blocks["global"] == magma.tobytes()
    assert [f["delay"] for f in blocks["frames"]] == [4] * 5  # centiseconds at 25 fps
    assert [f["table"] for f in blocks["frames"]] == [None, None, ice.tobytes(), ice.tobytes(), None]
    assert blocks["comment"].decode() == COMMENT == read_embedded(path)
    decoded = decoded_frames(path)
    assert len(decoded) == 5
    for got, index, table in zip(decoded, frames, tables):
        np.testing.assert_array_equal(got, table[index])


def test_gif_identical_frames_are_kept(tmp_path):
    path = tmp_path / "still.gif"
    frame, table = index_frames(1)[0], palette_table("gray")
    writer = GifWriter(GifSpec(path, 34, 21, fps=10, loop=0, comment="c", palette=table.tobytes()))
    for number in range(4):
        writer.write(Frame(number, preview=frame, palette=table))
    writer.commit()
    assert len(parse_gif(path)["frames"]) == 4 and len(decoded_frames(path)) == 4


def test_mp4_is_h264_yuv420p_faststart_with_metadata(tmp_path):
    path = tmp_path / "a.mp4"
    ramp = np.add.outer(np.arange(33) * 3, np.arange(49) * 2)  # smooth: chroma survives 4:2:0
    rgb = [palette_table("viridis")[(ramp + t) % 256] for t in range(12)]
    writer = Mp4Writer(Mp4Spec(path, 49, 33, fps=24, comment=COMMENT))
    for number, frame in enumerate(rgb):
        writer.write(Frame(number, rgb=frame))
    writer.commit()

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.name == "h264"
        assert stream.codec_context.pix_fmt == "yuv420p"
        assert (stream.codec_context.width, stream.codec_context.height) == (50, 34)
        assert stream.average_rate == 24
        assert container.metadata["comment"] == COMMENT
    decoded = decoded_frames(path)
    assert len(decoded) == 12
    error = np.abs(decoded[5][:33, :49].astype(int) - rgb[5].astype(int)).mean()
    assert error < 4  # lossy, but the picture is the one that was written
    data = path.read_bytes()
    assert data.index(b"moov") < data.index(b"mdat")  # faststart: playable while downloading


def write_mp4(path: Path, frames: list[np.ndarray], setting: str) -> None:
    height, width = frames[0].shape[:2]
    writer = Mp4Writer(Mp4Spec(path, width, height, fps=24, comment=COMMENT, setting=setting))
    for number, frame in enumerate(frames):
        writer.write(Frame(number, rgb=frame))
    writer.commit()


def test_mp4_pads_an_odd_size_with_the_edge_pixels(tmp_path):
    """yuv420p needs even sides: an odd frame is padded by repeating its last row and column
    (black padding would bleed into the picture's edge through chroma and the decoder's crop)."""
    path = tmp_path / "odd.mp4"
    white = np.full((33, 49, 3), 255, dtype=np.uint8)
    write_mp4(path, [white] * 3, "browser")
    decoded = decoded_frames(path)[-1]
    assert decoded.shape[:2] == (34, 50)
    assert decoded[-1].min() > 230 and decoded[:, -1].min() > 230  # the padding is white too


def test_every_preset_mp4_setting_has_an_encoding():
    assert tuple(MP4_SETTINGS) == PRESET_MP4_SETTINGS


def test_x264_threads_are_pinned_in_its_params():
    """x264 derives its threads from the machine's cores unless told: every count is given."""
    params = dict(item.split("=") for item in mp4.x264_params().split(":"))
    assert params["threads"] == str(mp4.MP4_THREADS)
    assert params["lookahead-threads"] == str(mp4.MP4_LOOKAHEAD_THREADS)
    assert params["sliced-threads"] == str(int(mp4.MP4_SLICED_THREADS))
    assert params["mbtree"] == "0"


def test_mp4_master_is_lossless_rgb(tmp_path):
    path = tmp_path / "master.mp4"
    rgb = [palette_table("fire")[index] for index in index_frames(6, 22, 34)]
    write_mp4(path, rgb, "master")
    with av.open(str(path)) as container:
        assert container.streams.video[0].codec_context.pix_fmt in ("gbrp", "rgb24", "bgr0")
        assert container.metadata["comment"] == COMMENT
    decoded = decoded_frames(path)
    assert len(decoded) == 6
    for got, want in zip(decoded, rgb):
        np.testing.assert_array_equal(got, want)


def test_mp4_browser_sharp_is_2x_yuv420p_and_keeps_thin_colours(tmp_path):
    """A one-pixel filament of one colour on black: 4:2:0 at 1x smears its chroma, 2x keeps it."""
    frame = np.zeros((32, 48, 3), np.uint8)
    frame[:, 20] = (40, 220, 255)
    errors = {}
    for setting in ("browser", "browser-sharp"):
        path = tmp_path / f"{setting}.mp4"
        write_mp4(path, [frame] * 4, setting)
        with av.open(str(path)) as container:
            context = container.streams.video[0].codec_context
            assert context.pix_fmt == "yuv420p"
            scale = MP4_SETTINGS[setting].scale
            assert (context.width, context.height) == (48 * scale, 32 * scale)
        got = decoded_frames(path)[0].astype(int)
        got = got.reshape(32, scale, 48, scale, 3).mean(axis=(1, 3))
        errors[setting] = np.abs(got[:, 20] - frame[:, 20]).mean()
    assert errors["browser-sharp"] < errors["browser"] / 2


def x264_options(path: Path) -> dict[str, str]:
    """The options x264 wrote into its stream (its SEI text: "options: key=value ...")."""
    text = path.read_bytes().split(b"options: ", 1)[1].split(b"\x00", 1)[0].decode()
    return dict(item.split("=", 1) for item in text.split() if "=" in item)


def test_mp4_browser_fast_is_x264_veryfast_at_the_same_threads_and_repeats(tmp_path):
    """browser-fast: the same stream as browser (yuv420p, the canvas's size, the pinned threads)
    at x264's veryfast analysis, the same bytes run to run."""
    rgb = [palette_table("viridis")[index] for index in index_frames(8, 32, 48)]
    paths = {name: tmp_path / f"{name}.mp4" for name in ("browser", "browser-fast", "again")}
    for name, path in paths.items():
        write_mp4(path, rgb, "browser" if name == "browser" else "browser-fast")
    fast, medium = x264_options(paths["browser-fast"]), x264_options(paths["browser"])
    assert (fast["subme"], fast["ref"], fast["me"]) == ("2", "1", "hex")  # veryfast
    assert (medium["subme"], medium["ref"]) == ("7", "3")  # medium
    assert fast["threads"] == medium["threads"] == str(mp4.MP4_THREADS)
    assert fast["mbtree"] == "0" and fast["crf"].startswith(str(mp4.MP4_CRF))
    assert paths["browser-fast"].read_bytes() == paths["again"].read_bytes()
    decoded = decoded_frames(paths["browser-fast"])
    assert len(decoded) == 8 and decoded[0].shape == (32, 48, 3)


def test_webp_is_lossless_looping_timed_and_carries_the_preset(tmp_path):
    rgb = [palette_table("viridis")[index] for index in index_frames(5)]
    paths = [tmp_path / "a.webp", tmp_path / "b.webp"]
    for path in paths:
        writer = open_writer(WebpSpec(path, 34, 21, fps=25, loop=2, comment=COMMENT + " <&>"))
        assert isinstance(writer, WebpWriter)
        for number, frame in enumerate(rgb):
            writer.write(Frame(number, rgb=frame))
        writer.commit()
    assert paths[0].read_bytes() == paths[1].read_bytes()
    with Image.open(paths[0]) as image:
        assert image.n_frames == 5 and image.info["loop"] == 2
        for number, want in enumerate(rgb):
            image.seek(number)
            image.load()
            assert image.info["duration"] == 40
            np.testing.assert_array_equal(np.asarray(image.convert("RGB")), want)
    assert read_embedded(paths[0]) == COMMENT + " <&>"


def test_png_is_the_last_frame_with_the_preset(tmp_path):
    path = tmp_path / "a.png"
    rgb = [palette_table("fire")[index] for index in index_frames(3)]
    writer = PngWriter(PngSpec(path, 34, 21, COMMENT))
    for number, frame in enumerate(rgb):
        writer.write(Frame(number, rgb=frame))
    writer.commit()
    (decoded,) = decoded_frames(path)
    np.testing.assert_array_equal(decoded, rgb[-1])
    itxt = png_chunks(path)[b"iTXt"]
    assert itxt.startswith(b"physarum\x00") and itxt.endswith(COMMENT.encode())
    assert read_embedded(path) == COMMENT


@pytest.mark.parametrize("writer_class", [GifWriter, Mp4Writer])
def test_abort_leaves_nothing(tmp_path, writer_class):
    path = tmp_path / "x.out"
    if writer_class is GifWriter:
        writer = open_writer(GifSpec(path, 34, 21, 10, 0, "c", palette_table("gray").tobytes()))
    else:
        writer = open_writer(Mp4Spec(path, 34, 21, 10, "c"))
        for number in range(80):  # the file appears when x264 first has output (after its lookahead)
            writer.write(Frame(number, rgb=palette_table("gray")[index_frames(1)[0]]))
    assert isinstance(writer, writer_class)
    assert writer.temporary.exists() and not path.exists()
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_gif_frames_compressed_in_worker_processes_are_the_same_bytes(tmp_path):
    rng = np.random.default_rng(11)
    magma, ice = palette_table("magma"), palette_table("ice")
    frames = [rng.integers(0, 256, (45, 70), dtype=np.uint8) // (1 + n % 4) for n in range(15)]
    written = []
    for processes in (1, 3):
        spec = GifSpec(
            tmp_path / f"p{processes}.gif", 70, 45, 24, 0, "x", magma.tobytes(), processes=processes
        )
        writer = GifWriter(spec)
        buffer = np.empty_like(frames[0])
        for number, index in enumerate(frames):
            buffer[:] = index  # the frame path reuses its buffers: the writer must copy
            writer.write(Frame(number, buffer, ice if number % 5 == 4 else magma))
        writer.commit()
        written.append(spec.path.read_bytes())
    assert written[0] == written[1]
    tables = [frame["table"] for frame in parse_gif(tmp_path / "p3.gif")["frames"]]
    assert len(tables) == 15 and tables[4] == ice.tobytes() and tables[0] is None


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from physarum.render.base.errors import os_error_message
from physarum.render.formats.contract import Frame
from physarum.render.formats.gif import GifSpec
from physarum.render.formats.mp4 import Mp4Spec
from physarum.render.formats.registry import open_writer
from physarum.render.look.palette import palette_table
import numpy as np

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # a disk that fills at 4 KiB
path = Path(sys.argv[1])
spec = {
    "gif": lambda: GifSpec(path, 64, 64, 10, 0, "c" * 2000, palette_table("gray").tobytes()),
    "mp4": lambda: Mp4Spec(path, 64, 64, 10, "c" * 2000),
}[path.suffix[1:]]()
rng = np.random.default_rng(0)
writer = open_writer(spec)
try:
    for number in range(60):
        index = rng.integers(0, 256, (64, 64), dtype=np.uint8)
        writer.write(Frame(number, preview=index, palette=palette_table("gray"), rgb=palette_table("gray")[index]))
    writer.complete()
except OSError as error:
    writer.abort()
    print(os_error_message(error))
"""


@pytest.mark.parametrize("suffix", ["gif", "mp4"])
def test_a_full_disk_names_the_output_not_a_descriptor_or_nothing(tmp_path, suffix):
    """A full disk while a GIF or MP4 is written (here a 4 KiB file size limit): the message
    names the output the user asked for (the MP4 once named /proc/self/fd/N, the GIF no file)."""
    path = tmp_path / f"x.{suffix}"
    ran = subprocess.run([sys.executable, "-c", FULL_DISK, str(path)], capture_output=True, text=True)
    assert ran.stdout.strip() == f"{path}: cannot write: File too large", ran.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []
