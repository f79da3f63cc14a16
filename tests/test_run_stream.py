"""render/run/stream.py and render/out/sinks.py: frames streamed to Python through the frame
path's sinks, the same frames as the files, stopped cleanly when the reader goes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from physarum.render.base.errors import RenderError
from physarum.render.formats.contract import Frame
from physarum.render.look.loops import shown_frames
from physarum.render.out.sinks import FrameQueue, StopRender
from physarum.render.preset import build_preset
from physarum.render.run import runner
from physarum.render.run.stream import FrameStream
from support import tiny_data


def _preset(**sections):
    return build_preset(tiny_data(**sections), "tiny.yaml")


def _folder_frames(folder: Path) -> list[np.ndarray]:
    paths = sorted(folder.glob("*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    frames = []
    for path in paths:
        with Image.open(path) as image:
            frames.append(np.asarray(image.convert("RGB")))
    return frames


@pytest.mark.parametrize("loop", ["none", "ping-pong", "crossfade"])
def test_streamed_frames_are_the_files_frames(tmp_path, loop):
    output = {"formats": ["png"], "loop_mode": loop}
    if loop == "crossfade":
        output["loop_frames"] = 3
    preset = _preset(output=output)
    runner.render(
        preset, backend="torch", device="cpu", out_dir=tmp_path / "o", frames_dir=tmp_path / "f", quiet=True
    )
    on_disk = _folder_frames(tmp_path / "f")
    with FrameStream(preset, "torch", "cpu") as stream:
        streamed = [frame.rgb for frame in stream]
    assert len(streamed) == len(on_disk) >= shown_frames(preset)
    assert all(np.array_equal(a, b) for a, b in zip(streamed, on_disk))
    with Image.open(tmp_path / "o" / "tiny" / "tiny-s3.png") as still:
        assert np.array_equal(streamed[shown_frames(preset) - 1], np.asarray(still.convert("RGB")))


def test_a_sink_beside_the_files_sees_the_gifs_frames_and_the_files_are_unchanged(tmp_path):
    class Previews:
        reads, replays = frozenset({"preview"}), True

        def __init__(self):
            self.frames, self.closed = [], []

        def write(self, frame: Frame) -> None:
            self.frames.append(frame.palette[frame.preview])  # the frame as the GIF shows it

        def close(self, error=None) -> None:
            self.closed.append(error)

    preset = _preset(output={"formats": ["gif"], "loop_mode": "ping-pong"})
    plain = runner.render(preset, backend="torch", device="cpu", out_dir=tmp_path / "a", quiet=True)
    sink = Previews()
    watched = runner.render(
        preset, backend="torch", device="cpu", out_dir=tmp_path / "b", quiet=True, sinks=[sink]
    )
    assert watched.outputs["gif"].read_bytes() == plain.outputs["gif"].read_bytes()
    assert sink.closed == [None]
    with Image.open(watched.outputs["gif"]) as gif:
        shown = []
        for index in range(gif.n_frames):
            gif.seek(index)
            shown.append(np.asarray(gif.convert("RGB")))
    assert len(sink.frames) == len(shown) and all(np.array_equal(a, b) for a, b in zip(sink.frames, shown))


def test_the_first_frame_comes_before_the_run_ends_and_a_break_stops_it_cleanly(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    before = set(threading.enumerate())
    preset = _preset(run={"steps": 3000, "steps_per_frame": 1})  # 3000 frames: minutes to the end
    stream = FrameStream(preset, "torch", "cpu")
    started = time.perf_counter()
    frames = iter(stream)
    first = next(frames)
    assert first.number == 0 and stream.thread.is_alive()
    del frames  # as a broken for-loop drops its iterator
    assert time.perf_counter() - started < 60
    assert not stream.thread.is_alive() and set(threading.enumerate()) <= before
    assert list(tmp_path.rglob("*")) == [tmp_path / "tmp"]  # no file, folder or lock anywhere


def test_a_failed_render_raises_to_the_reader():
    preset = _preset(output={"formats": ["png"]})
    with pytest.raises(RenderError, match="backend"), FrameStream(preset, "nonesuch", "cpu") as stream:
        list(stream)
    assert not stream.thread.is_alive()


def test_a_frame_queue_holds_at_most_its_size_and_stops_its_writer():
    sink = FrameQueue("rgb", size=2)
    written, raised = [], []

    def writer():
        try:
            for number in range(20):
                sink.write(Frame(number, rgb=np.full((2, 2, 3), number, np.uint8)))
                written.append(number)
        except StopRender as error:
            raised.append(error)

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.3)
    assert written == [0, 1] and thread.is_alive()  # the third waits for the reader
    assert sink.get().rgb[0, 0, 0] == 0
    sink.stop()
    thread.join(5)
    assert not thread.is_alive() and len(raised) == 1 and len(written) <= 3


def test_a_render_without_files_refuses_what_writes_files(tmp_path):
    preset = _preset(checkpoint={"every": 6})
    with pytest.raises(ValueError, match="checkpoint"):
        runner.render(preset, backend="torch", device="cpu", out_dir=tmp_path, write_files=False, quiet=True)
    assert not any(tmp_path.iterdir())


def test_the_apis_streams_refuse_a_wrong_argument_at_the_call():
    import physarum

    for stream in (physarum.frames, physarum.images):
        with pytest.raises(
            TypeError, match=r"physarum\.(frames|images): preset must be a Preset.*physarum\.load"
        ):
            stream("quickstart")
        with pytest.raises(TypeError, match="backend must be text"):
            stream(_preset(), backend=3)
