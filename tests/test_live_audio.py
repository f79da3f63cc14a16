"""The live studio playing a preset's soundtrack (the live loop's clock mode, the server's
/sound and `clock`): the frame shown follows the page's audio clock (floor
of time x fps), a seek back replays from step 0, each frame shown is that frame of a render of
the recorded preset; the server serves the preset's own sound file, its bytes and type, and
refuses a clock that is no time and a file changed since it was read."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import queue
import threading

import pytest
from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient, TestServer
from test_audio_render import audio_data, beat_track, write_wav

from physarum.render.base.errors import PresetError
from physarum.render.live.record import Performance
from physarum.render.live.server import Studio, make_app
from physarum.render.live.session import LiveSession, clock_frame
from physarum.render.preset import build_preset
from physarum.render.run.stream import FrameStream

FPS = 20  # tiny_data's output.fps


def sha(rgb) -> str:
    return hashlib.sha256(rgb.tobytes()).hexdigest()


@pytest.fixture
def sound(tmp_path):
    return write_wav(tmp_path / "beat.wav", beat_track(1.0))  # 20 frames at 20 fps


def performance(sound) -> Performance:
    data = audio_data(sound, output={"formats": ["png"], "fps": FPS})
    return Performance.of(build_preset(data, "live.yaml"))


def test_the_clock_frame_is_the_floor_of_time_times_fps():
    assert clock_frame(0, 30, 100) == 0
    assert clock_frame(0.0999, 30, 100) == 2  # 2.997
    assert clock_frame(0.1, 30, 100) == 3  # the float 0.1 is above 1/10: 3.0000000000000002
    assert clock_frame(1 / 3, 30, 100) == 9  # the float 1/3 is below 1/3: 9.999...
    assert clock_frame(500, 30, 100) == 99  # past the end: the last frame
    for bad in (-0.5, math.nan, math.inf, "1.0", True, None):
        with pytest.raises(ValueError, match="a time in seconds"):
            clock_frame(bad, 30, 100)


def test_a_followed_key_is_kept_as_written_and_the_run_is_the_tracks(sound):
    live = performance(sound)
    assert live.data["model"]["deposit"] == {
        "audio": "beat",
        "range": [2.0, 9.0],
        "attack": 0,
        "release": "150ms",
    }
    assert live.preset.frames == 20 and live.data["run"]["steps"] == 40
    with pytest.raises(
        PresetError, match="model.deposit'?: not changed: it is fixed here: it follows the soundtrack's beat"
    ):
        live.check("model.deposit", 4.0, 10, 3)


def follow(loop: LiveSession, times: list, changes: dict) -> list:
    """Report each clock time in turn (a change first where `changes` names the time), taking the
    frame it shows: [(take, frame, sha256)]."""
    shown = []
    for time in times:
        if time in changes:
            loop.change(*changes[time])
        target = loop.follow_clock(time)
        if shown and shown[-1][1] == target:  # the clock stands on the frame shown: nothing new
            continue
        frame = loop.frames.get(timeout=60)
        assert frame.number == target, (time, frame.number, target)
        shown.append((frame.take, frame.number, sha(frame.rgb)))
    return shown


def test_frames_follow_the_clock_and_are_the_recorded_renders(sound):
    loop = LiveSession(performance(sound), backend="torch", device="cpu").start()
    try:
        first = loop.frames.get(timeout=60)  # before any clock: frame 0
        assert (first.number, first.take) == (0, 0)
        # forward with skips, back (a replay), a change, on to past the end
        times = [0.12, 0.26, 0.27, 0.1, 0.31, 0.61, 5.0]
        shown = follow(loop, times, {0.31: ("model.sensor_angle", 60.0)})
        loop.follow_clock(1.2)  # the clock stands on the last frame (paused, or past the end)
        with pytest.raises(queue.Empty):
            loop.frames.get(timeout=1.5)
        recorded = loop.snapshot()[1].recorded(len(shown))
    finally:
        loop.close()
    assert [(take, number) for take, number, _ in shown] == [(0, 2), (0, 5), (1, 2), (1, 6), (1, 12), (1, 19)]
    assert recorded.frames == 20  # the recorded render is the whole track
    rendered = [sha(frame.rgb) for frame in FrameStream(recorded, backend="torch", device="cpu")]
    change_step = recorded.run.warmup + 3 * recorded.run.steps_per_frame  # frame 2's step
    for take, number, digest in [(0, 0, sha(first.rgb)), *shown]:
        if take == 1 or recorded.run.warmup + (number + 1) * recorded.run.steps_per_frame <= change_step:
            assert rendered[number] == digest, (take, number)
    # the first take's frame 5 came before the change at frame 2's step: the render's differs
    assert rendered[5] != shown[1][2]


def run(test, live: Studio):
    async def main():
        async with TestClient(TestServer(make_app(live), host="127.0.0.1")) as client:
            await test(client)

    asyncio.run(main())
    assert not any(t.name.startswith("physarum-live") for t in threading.enumerate())


async def message(ws, kind: str) -> dict:
    while True:
        received = await asyncio.wait_for(ws.receive(), 60)
        assert received.type in (WSMsgType.TEXT, WSMsgType.BINARY), received
        if received.type == WSMsgType.BINARY and kind == "frame":
            length = int.from_bytes(received.data[:4], "big")
            return json.loads(received.data[4 : 4 + length])
        if received.type == WSMsgType.TEXT and json.loads(received.data)["type"] == kind:
            return json.loads(received.data)


def test_the_server_serves_the_track_and_follows_the_reported_clock(tmp_path, sound):
    live = Studio(performance(sound), tmp_path / "out", backend="torch", device="cpu")

    async def test(client):
        response = await client.get("/sound")
        assert response.status == 200 and response.headers["Content-Type"] == "audio/wav"
        assert await response.read() == sound.read_bytes()
        ranged = await client.get("/sound", headers={"Range": "bytes=10-19"})  # the element seeks so
        assert ranged.status == 206 and await ranged.read() == sound.read_bytes()[10:20]
        async with client.ws_connect("/ws") as ws:
            hello = await message(ws, "hello")
            assert hello["sound"] == {
                "url": "sound",
                "name": "beat.wav",
                "type": "audio/wav",
                "fps": FPS,
                "frames": 20,
            }
            assert (await message(ws, "frame"))["frame"] == 0
            for time, number in ((0.33, 6), (0.05, 1), (0.9999, 19)):
                await ws.send_json({"type": "clock", "time": time})
                header = await message(ws, "frame")
                assert header["frame"] == number and header["step"] == 2 * (number + 1)
            await ws.send_json({"type": "clock", "time": "/etc/passwd"})
            assert "a time in seconds" in (await message(ws, "problem"))["problems"][0]
            await ws.send_json({"type": "save"})
            saved = await message(ws, "saved")
            assert saved["frames"] == 2  # the take since the seek back: frames 1 and 19
            await ws.send_json({"type": "restart", "settings": {"seed": 9}})
            header = await message(ws, "frame")  # a new performance starts at the track's start
            assert (header["segment"], header["frame"], header["take"]) == (1, 0, 0)
        os.utime(sound, ns=(1, 1))  # the file is not the one the preset followed any more
        changed = await client.get("/sound")
        assert changed.status == 409 and "changed after it was read" in await changed.text()

    run(test, live)


def test_a_preset_without_sound_has_no_track_and_no_clock(tmp_path):
    from support import tiny_data

    preset = build_preset(tiny_data(output={"formats": ["png"]}), "tiny.yaml")
    live = Studio(Performance.of(preset), tmp_path / "out", backend="torch", device="cpu")

    async def test(client):
        assert (await client.get("/sound")).status == 404
        async with client.ws_connect("/ws") as ws:
            assert (await message(ws, "hello"))["sound"] is None
            await ws.send_json({"type": "clock", "time": 1.0})
            assert "no sound file" in (await message(ws, "problem"))["problems"][0]

    run(test, live)
