"""The codecs beside H.264 (issue 37 item 2): output.mp4 hevc (libx265) and av1 (SVT-AV1), the
WebM's VP9 and the MOV's ProRes 4444, each decoded by a decoder that did not encode it (FFmpeg's
hevc, libdav1d, FFmpeg's vp9 and prores), and the reproducibility docs/outputs.md states: the same
bytes run to run at the pinned settings; for SVT-AV1, VP9 and ProRes at another thread count too."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from physarum.render.formats import mov, mp4, webm
from physarum.render.formats.av_video import AvVideoWriter
from physarum.render.formats.contract import Frame
from physarum.render.look.palette import palette_table
from physarum.render.out.specs import check_outputs
from physarum.render.preset import build_preset
from support import tiny_data


def frames(count: int = 6, height: int = 48, width: int = 64) -> list[np.ndarray]:
    """Smooth moving blobs in a palette: a picture a lossy codec keeps close."""
    y, x = np.mgrid[0:height, 0:width]
    table = palette_table("magma")
    return [
        table[(127 + 120 * np.sin((x + 3 * n) / 9.0) * np.cos((y - 2 * n) / 7.0)).astype(np.uint8)]
        for n in range(count)
    ]


def write_mp4(path, pictures, setting: str) -> bytes:
    height, width = pictures[0].shape[:2]
    writer = mp4.Mp4Writer(mp4.Mp4Spec(path, width, height, 24, "a comment", setting))
    for number, picture in enumerate(pictures):
        writer.write(Frame(number, rgb=picture))
    writer.commit()
    return path.read_bytes()


def write_av(path, module, table, fmt, pictures, threads: int | None = None, alpha=None) -> bytes:
    setting = getattr(module, table)["opaque" if alpha is None else "alpha"]
    if threads is not None:
        setting = dataclasses.replace(setting, threads=threads)
    height, width = pictures[0].shape[:2]
    options = getattr(module, "WEBM_CONTAINER", None)
    writer = AvVideoWriter(path, fmt, setting, (width, height), 24, "c", alpha, container_options=options)
    for number, picture in enumerate(pictures):
        writer.write(Frame(number, rgb=picture, alpha=picture.max(axis=2)))
    writer.commit()
    return path.read_bytes()


def decoded(path) -> tuple[str, str, list[np.ndarray]]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        tag = stream.codec_context.codec_tag
        pictures = [frame.to_ndarray(format="rgb24") for frame in container.decode(stream)]
        return stream.codec_context.name, tag, pictures


@pytest.mark.parametrize(("setting", "codec", "tag"), [("hevc", "hevc", "hvc1"), ("av1", "libdav1d", "av01")])
def test_hevc_and_av1_mp4s_decode_close_to_their_frames(tmp_path, setting, codec, tag):
    pictures = frames()
    write_mp4(tmp_path / "a.mp4", pictures, setting)
    name, found_tag, got = decoded(tmp_path / "a.mp4")
    assert name == codec and found_tag == tag
    assert len(got) == len(pictures)
    for picture, want in zip(got, pictures, strict=True):
        assert np.abs(picture.astype(int) - want).mean() < 6


@pytest.mark.parametrize("setting", ["hevc", "av1"])
def test_hevc_and_av1_bytes_repeat_at_the_pinned_settings(tmp_path, setting):
    pictures = frames()
    assert write_mp4(tmp_path / "a.mp4", pictures, setting) == write_mp4(
        tmp_path / "b.mp4", pictures, setting
    )


def test_av1_bytes_do_not_follow_its_thread_count(tmp_path, monkeypatch):
    pictures = frames()
    first = write_mp4(tmp_path / "a.mp4", pictures, "av1")
    pinned = mp4.MP4_SETTINGS["av1"]
    monkeypatch.setitem(
        mp4.MP4_SETTINGS, "av1", dataclasses.replace(pinned, params=(pinned.params[0], "lp=2"))
    )
    assert write_mp4(tmp_path / "b.mp4", pictures, "av1") == first


@pytest.mark.parametrize(
    ("module", "table", "fmt", "codec", "alpha"),
    [
        (webm, "WEBM_SETTINGS", "webm", "vp9", None),
        (webm, "WEBM_SETTINGS", "webm", "vp9", "straight"),
        (mov, "MOV_SETTINGS", "mov", "prores", "straight"),
    ],
)
def test_vp9_and_prores_bytes_repeat_at_any_thread_count(tmp_path, module, table, fmt, codec, alpha):
    pictures = frames()
    first = write_av(tmp_path / f"a.{fmt}", module, table, fmt, pictures, alpha=alpha)
    assert write_av(tmp_path / f"b.{fmt}", module, table, fmt, pictures, alpha=alpha) == first
    assert write_av(tmp_path / f"c.{fmt}", module, table, fmt, pictures, threads=2, alpha=alpha) == first
    name, _, got = decoded(tmp_path / f"a.{fmt}")
    assert name == codec and len(got) == len(pictures)
    assert np.abs(got[-1].astype(int) - pictures[-1]).mean() < 6


@pytest.mark.parametrize("setting", ["hevc", "av1"])
def test_the_sidecar_notes_say_what_repeats(setting):
    preset = build_preset(tiny_data(output={"formats": ["mp4"], "mp4": setting}), "t.yaml")
    notes = check_outputs(preset)
    assert any(note.startswith(f"mp4 {setting}:") and "repeat" in note for note in notes)
    plain = build_preset(tiny_data(output={"formats": ["mp4"]}), "t.yaml")
    assert check_outputs(plain) == []


def test_hashes_differ_between_codecs(tmp_path):
    pictures = frames()
    digests = {
        s: hashlib.sha256(write_mp4(tmp_path / f"{s}.mp4", pictures, s)).hexdigest()
        for s in ("browser", "hevc", "av1")
    }
    assert len(set(digests.values())) == 3


POLICIES = """
import os, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
if sys.argv[1] == "fifo":
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))  # the user's chrt -f 1
from test_formats_codecs import frames, write_mp4
write_mp4(Path(sys.argv[2]), frames(4), "av1")
print(sorted({{os.sched_getscheduler(int(task)) for task in os.listdir("/proc/self/task")}}))
"""


@pytest.mark.parametrize("start", ["time-shared", "fifo"])
def test_an_av1_mp4_leaves_the_process_as_it_found_it(tmp_path, start):
    """SVT-AV1, run as root, sets the thread that opens it (and the threads it starts) to
    SCHED_FIFO 99: the MP4 writer makes them time-shared again (av_video.scheduling_kept), so a
    render's own thread and the processes it starts are not real-time. A process run real-time
    by its user (chrt) stays so."""
    if start == "fifo" and os.geteuid() != 0:
        pytest.skip("a real-time policy needs CAP_SYS_NICE (root)")
    script = POLICIES.format(tests=str(Path(__file__).parent))
    done = subprocess.run(
        [sys.executable, "-c", script, start, str(tmp_path / "a.mp4")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    expected = [os.SCHED_FIFO] if start == "fifo" else [os.SCHED_OTHER]
    assert done.stdout.strip() == str(expected)
    assert (tmp_path / "a.mp4").stat().st_size > 0
