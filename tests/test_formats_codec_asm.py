"""Whether a video codec's bytes follow the CPU's instruction sets (docs/outputs.md, "MP4
settings"; the harness's case codec-asm, whose child process encodes here): on this CPU, SVT-AV1,
libvpx's VP9 and prores_ks give the same bytes with their assembly off as on, x264 and x265 the
same up to AVX2 as with all they detect, and FFmpeg's RGB-to-YUV conversion the same up to AVX2
as with all it detects; what the sidecar's notes say of HEVC and AV1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from physarum.render.look.palette import palette_table
from physarum.render.out.specs import check_outputs
from physarum.render.preset import build_preset
from support import ROOT, tiny_data

CASE = ROOT / "scripts" / "cases" / "outputs.py"


@pytest.fixture(scope="module")
def frames_file(tmp_path_factory):
    """Moving blobs in a palette with seeded noise, 12 frames of 128x96 (smooth frames alone give
    x264 no choice its C and its assembly make differently)."""
    y, x = np.mgrid[0:96, 0:128]
    table, noise = palette_table("magma"), np.random.default_rng(1)
    pictures = []
    for n in range(12):
        light = (
            127 + 120 * np.sin((x + 3 * n) / 9.0) * np.cos((y - 2 * n) / 7.0) + noise.normal(0, 20, x.shape)
        )
        pictures.append(table[np.clip(light, 0, 255).astype(np.uint8)])
    path = tmp_path_factory.mktemp("asm") / "frames.npy"
    np.save(path, np.stack(pictures))
    return path


def encoded(frames_file, codec: str, codec_level: str, ffmpeg_level: str) -> dict:
    """The case's child: one encode in a process of its own (VPX_SIMD_CAPS set for libvpx)."""
    env = dict(os.environ)
    if codec == "vp9" and codec_level == "none":
        env["VPX_SIMD_CAPS"] = "0"
    argv = [sys.executable, str(CASE), "asm", codec, codec_level, ffmpeg_level, str(frames_file)]
    done = subprocess.run(
        [*argv, str(frames_file.parent)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("codec", "codec_level", "ffmpeg_level"),
    [
        ("av1", "none", "auto"),
        ("vp9", "none", "auto"),
        ("prores", "auto", "none"),
        ("h264", "avx2", "auto"),
        ("hevc", "avx2", "auto"),
        ("h264", "auto", "avx2"),
    ],
)
def test_the_same_bytes_with_less_assembly(frames_file, codec, codec_level, ffmpeg_level):
    first = encoded(frames_file, codec, "auto", "auto")
    other = encoded(frames_file, codec, codec_level, ffmpeg_level)
    assert other["sha256"] == first["sha256"] and first["bytes"] > 1000
    if ffmpeg_level == "none":
        assert other["ffmpeg_flags"] == 0 < first["ffmpeg_flags"]  # the switch took


@pytest.mark.slow
def test_x264_in_c_alone_is_another_file(frames_file):
    """The switch is real: x264 without its assembly makes other bytes (so the sameness above
    is the codec's, not a switch that does nothing)."""
    assert (
        encoded(frames_file, "h264", "none", "auto")["sha256"]
        != encoded(frames_file, "h264", "auto", "auto")["sha256"]
    )


@pytest.mark.parametrize(
    ("setting", "words"), [("hevc", "AVX2 or AVX-512 alike, not in C alone"), ("av1", "assembly off as on")]
)
def test_the_sidecar_notes_say_what_the_cpu_changes(setting, words):
    preset = build_preset(tiny_data(output={"formats": ["mp4"], "mp4": setting}), "t.yaml")
    assert any(note.startswith(f"mp4 {setting}:") and words in note for note in check_outputs(preset))
