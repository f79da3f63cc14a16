"""The encoder process: decodable files, failures reported, started by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from physarum.render.palette import palette_table


def test_encoder_process_writes_decodable_files_and_reports_failures(tmp_path):
    from physarum.render.encoder_process import EncoderProcess

    def specs(folder: Path, stem: str) -> list[dict]:
        return [
            {
                "format": "gif",
                "path": str(folder / f"{stem}.gif"),
                "width": 15,
                "height": 10,
                "fps": 10,
                "loop": 0,
                "comment": "a comment",
                "palette": palette_table("magma").reshape(-1).tolist(),
            },
            {
                "format": "mp4",
                "path": str(folder / f"{stem}.mp4"),
                "width": 30,
                "height": 20,
                "fps": 10,
                "comment": "a comment",
            },
            {
                "format": "png",
                "path": str(folder / f"{stem}.png"),
                "width": 30,
                "height": 20,
                "comment": "a comment",
                "dpi": None,
            },
        ]

    frames = [np.full((20, 30, 3), 40 * i, dtype=np.uint8) for i in range(5)]
    previews = [np.full((10, 15), 50 * i, dtype=np.uint8) for i in range(5)]
    table = palette_table("magma")
    writer = EncoderProcess(specs(tmp_path, "ok"), tmp_path / "ok")
    for preview, frame in zip(previews, frames):
        writer.write(preview, table, frame)
    writer.commit()
    with av.open(str(tmp_path / "ok.mp4")) as video:
        assert video.metadata["comment"] == "a comment"
        decoded = [f.to_ndarray(format="rgb24") for f in video.decode(video=0)]
    assert len(decoded) == 5 and decoded[0].shape == (20, 30, 3)
    assert abs(int(decoded[4].mean()) - 160) <= 2
    with Image.open(tmp_path / "ok.gif") as gif:
        assert gif.n_frames == 5 and gif.size == (15, 10)
    assert np.array_equal(np.asarray(Image.open(tmp_path / "ok.png")), frames[-1])
    broken = EncoderProcess(specs(tmp_path / "no-such-folder", "x"), tmp_path / "x")
    with pytest.raises(OSError, match="encoder process"):
        for preview, frame in zip(previews, frames):
            broken.write(preview, table, frame)
        broken.commit()
    broken.abort()
    aborted = EncoderProcess(specs(tmp_path, "aborted"), tmp_path / "aborted")
    aborted.write(previews[0], table, frames[0])
    aborted.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.gif", "ok.mp4", "ok.png"]
    alone = subprocess.run(
        [sys.executable, "-m", "physarum.render.encoder_process"], input=b"", capture_output=True
    )  # started by hand, with nothing to encode
    assert alone.returncode == 1 and alone.stdout.decode().strip() == (
        "error: OSError: no header on standard input (physarum starts this process and sends it one)"
    )
