"""The encoder child of a batch job: decodable files, failures reported, nothing left on abort,
and each of its writers given only what it reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from physarum.render.formats.contract import Frame
from physarum.render.formats.gif import GifSpec
from physarum.render.formats.mp4 import Mp4Spec
from physarum.render.formats.png import PngSpec
from physarum.render.look.palette import palette_table
from physarum.render.out.encoder_process import EncoderProcess

FRAMES = [np.full((20, 30, 3), 40 * i, dtype=np.uint8) for i in range(5)]
PREVIEWS = [np.full((10, 15), 50 * i, dtype=np.uint8) for i in range(5)]
TABLE = palette_table("magma")


def gif_spec(folder: Path, stem: str) -> GifSpec:
    return GifSpec(folder / f"{stem}.gif", 15, 10, 10, 0, "a comment", TABLE.tobytes())


def specs(folder: Path, stem: str) -> list:
    return [
        gif_spec(folder, stem),
        Mp4Spec(folder / f"{stem}.mp4", 30, 20, 10, "a comment"),
        PngSpec(folder / f"{stem}.png", 30, 20, "a comment", None),
    ]


def test_encoder_process_writes_decodable_files_and_reports_failures(tmp_path):
    writer = EncoderProcess(specs(tmp_path, "ok"), tmp_path / "ok")
    for number, (preview, frame) in enumerate(zip(PREVIEWS, FRAMES)):
        writer.write(Frame(number, preview, TABLE, frame))
    writer.commit()
    with av.open(str(tmp_path / "ok.mp4")) as video:
        assert video.metadata["comment"] == "a comment"
        decoded = [f.to_ndarray(format="rgb24") for f in video.decode(video=0)]
    assert len(decoded) == 5 and decoded[0].shape == (20, 30, 3)
    assert abs(int(decoded[4].mean()) - 160) <= 2
    with Image.open(tmp_path / "ok.gif") as gif:
        assert gif.n_frames == 5 and gif.size == (15, 10)
    assert np.array_equal(np.asarray(Image.open(tmp_path / "ok.png")), FRAMES[-1])
    broken = EncoderProcess(specs(tmp_path / "no-such-folder", "x"), tmp_path / "x")
    with pytest.raises(OSError, match="encoder process"):
        for number, (preview, frame) in enumerate(zip(PREVIEWS, FRAMES)):
            broken.write(Frame(number, preview, TABLE, frame))
        broken.commit()
    broken.abort()
    aborted = EncoderProcess(specs(tmp_path, "aborted"), tmp_path / "aborted")
    aborted.write(Frame(0, PREVIEWS[0], TABLE, FRAMES[0]))
    aborted.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.gif", "ok.mp4", "ok.png"]
    alone = subprocess.run(
        [sys.executable, "-m", "physarum.render.out.encoder_process"], input=b"", capture_output=True
    )  # started by hand, with nothing to encode
    assert alone.returncode == 1 and alone.stdout.decode().strip() == (
        "error: OSError: no header on standard input (physarum starts this process and sends it one)"
    )


def test_a_child_of_one_format_takes_only_what_it_reads(tmp_path):
    """A GIF alone ignores the RGB frames it is handed; a PNG alone is written from the last
    frame with an RGB, the frames before carrying none (a batch of one format sends these)."""
    gif = EncoderProcess([gif_spec(tmp_path, "a")], tmp_path / "a")
    for number, (preview, frame) in enumerate(zip(PREVIEWS, FRAMES)):
        gif.write(Frame(number, preview, TABLE, frame))
    gif.commit()
    with Image.open(tmp_path / "a.gif") as image:
        assert image.n_frames == 5 and image.size == (15, 10)
    png = EncoderProcess([PngSpec(tmp_path / "b.png", 30, 20, "c")], tmp_path / "b")
    for number in range(4):
        png.write(Frame(number, PREVIEWS[number], TABLE))
    png.write(Frame(4, PREVIEWS[4], TABLE, FRAMES[4]))
    png.commit()
    assert np.array_equal(np.asarray(Image.open(tmp_path / "b.png")), FRAMES[4])


def test_the_encoder_child_imports_no_torch():
    """Every batch job starts a child: importing torch there (1.5 s, some 300 MB) made a batch
    of tiny jobs take seconds where its simulation took milliseconds (errors.py imported it)."""
    code = "import sys, physarum.render.out.encoder_process; print(sorted(m for m in sys.modules if m.startswith('torch')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
