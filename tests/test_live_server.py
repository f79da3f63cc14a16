"""The live server's refusals, through a real aiohttp client on loopback: the token, another
origin's socket, a second page's control, keys and values the schema refuses, files by number
only; and what it writes (only into its folder), and its threads stopped when it stops."""

from __future__ import annotations

import asyncio
import hashlib
import json
import struct
import threading
from pathlib import Path

import numpy as np
import yaml
from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient, TestServer
from PIL import Image

from physarum.render.live.record import Performance
from physarum.render.live.server import Studio, loopback, make_app
from physarum.render.preset import build_preset, load_preset
from physarum.render.preset.sections import saved_in
from physarum.render.run.stream import FrameStream
from support import tiny_data


def studio(tmp_path, **options) -> Studio:
    preset = build_preset(tiny_data(output={"formats": ["png"]}), "tiny.yaml")
    return Studio(Performance.of(preset), tmp_path / "out", backend="torch", device="cpu", **options)


def run(test, live: Studio):
    """Run test(client) against the studio's app on a loopback port; afterwards no thread of the
    studio is left."""

    async def main():
        async with TestClient(TestServer(make_app(live), host="127.0.0.1")) as client:
            await test(client)

    asyncio.run(main())
    assert not any(t.name.startswith("physarum-live") for t in threading.enumerate())


async def reply(ws, kind: str) -> dict:
    """The next JSON message of `kind` (frames and other messages skipped)."""
    while True:
        message = await asyncio.wait_for(ws.receive(), 30)
        assert message.type in (WSMsgType.TEXT, WSMsgType.BINARY), message
        if message.type == WSMsgType.TEXT and json.loads(message.data)["type"] == kind:
            return json.loads(message.data)


async def frame(ws) -> dict:
    while True:
        message = await asyncio.wait_for(ws.receive(), 30)
        if message.type == WSMsgType.BINARY:
            length = struct.unpack(">I", message.data[:4])[0]
            return json.loads(message.data[4 : 4 + length])


def test_loopback_addresses():
    assert loopback("127.0.0.1") and loopback("::1") and loopback("localhost") and loopback("127.2.3.4")
    assert not loopback("0.0.0.0") and not loopback("192.168.1.2") and not loopback("example.org")


def test_a_token_is_required_where_one_is_set(tmp_path):
    async def test(client):
        assert (await client.get("/")).status == 403
        assert (await client.get("/?token=wrong")).status == 403
        assert (await client.get("/ws")).status == 403
        page = await client.get("/?token=s3cret")
        assert page.status == 200 and "physarum live" in await page.text()
        async with client.ws_connect("/ws?token=s3cret") as ws:
            assert (await reply(ws, "hello"))["control"] is True

    run(test, studio(tmp_path, token="s3cret"))


def test_another_origins_socket_and_unknown_files_are_refused(tmp_path):
    async def test(client):
        response = await client.get("/ws", headers={"Origin": "http://evil.example"})
        assert response.status == 403
        for name in ("0", "..%2F..%2Fetc%2Fpasswd", "-1", "x"):
            assert (await client.get(f"/files/{name}")).status == 404

    run(test, studio(tmp_path))


def test_the_second_page_watches_unless_shared(tmp_path):
    async def test(client):
        async with client.ws_connect("/ws") as first, client.ws_connect("/ws") as second:
            assert (await reply(first, "hello"))["control"] is True
            assert (await reply(second, "hello"))["control"] is False
            await frame(second)  # it sees the frames
            await second.send_json({"type": "set", "key": "model.decay", "value": 0.2})
            assert "another page controls" in (await reply(second, "problem"))["problems"][0]
            await second.send_json({"type": "save"})
            assert "another page controls" in (await reply(second, "problem"))["problems"][0]
            await first.send_json({"type": "set", "key": "model.decay", "value": 0.2})
            assert (await reply(first, "applied"))["changes"][0]["key"] == "model.decay"

    run(test, studio(tmp_path))

    async def shared(client):
        async with client.ws_connect("/ws") as first, client.ws_connect("/ws") as second:
            assert (await reply(second, "hello"))["control"] is True
            await second.send_json({"type": "set", "key": "model.decay", "value": 0.3})
            assert (await reply(first, "applied"))["changes"][0]["value"] == 0.3

    run(shared, studio(tmp_path, shared=True))


async def no_frame_within(ws, seconds: float) -> bool:
    try:
        await asyncio.wait_for(frame(ws), seconds)
    except TimeoutError:
        return True
    return False


def test_a_paced_page_is_sent_at_most_ahead_frames_it_has_not_drawn(tmp_path):
    """The loop ran as far ahead of a page as the socket's buffers let it (about 370 frames a
    second of the tiny preset): a page slower than the loop drew a backlog it never caught up
    with, and a CPU-starved headless Chromium answered nothing for minutes. A page that asks for
    a pace (the live page: ?ahead=2) gets the frames it reports drawn ('shown') and `ahead` more;
    the loop waits for it where it may control, a watcher behind it is skipped to later frames."""

    async def test(client):
        for ahead in ("0", "65", "x", "²"):
            response = await client.get(f"/ws?ahead={ahead}")
            assert response.status == 400 and "from 1 to 64" in await response.text()
        async with client.ws_connect("/ws?ahead=2") as page:
            assert [(await frame(page))["frame"] for _ in range(2)] == [0, 1]
            assert await no_frame_within(page, 0.5)
            async with client.ws_connect("/ws?ahead=1") as watcher:
                assert (await reply(watcher, "hello"))["control"] is False
                await page.send_json({"type": "shown"})
                assert (await frame(page))["frame"] == 2
                assert (await frame(watcher))["frame"] == 2
                for _ in range(3):  # the watcher reports nothing: the page goes on without it
                    await page.send_json({"type": "shown"})
                    await frame(page)
                assert await no_frame_within(watcher, 0.5)

    run(test, studio(tmp_path))


def test_bad_commands_get_a_message_and_the_loop_goes_on(tmp_path):
    async def test(client):
        async with client.ws_connect("/ws") as ws:
            before = (await frame(ws))["frame"]
            commands = [
                ({"type": "set", "key": "model.decay", "value": 2}, "less than 1"),
                ({"type": "set", "key": "output.formats", "value": 1}, "not a key the page controls"),
                ({"type": "set", "key": "world.walls.path", "value": "/etc/passwd"}, "not a key"),
                ({"type": "set", "key": ["model", "decay"], "value": 1}, "a key is a string"),
                ({"type": "set", "key": "model.decay", "value": "0.2"}, "a number is needed"),
                ({"type": "restart", "settings": {"name": "../../x"}}, "not a key a restart changes"),
                ({"type": "restart", "settings": {"seed": -4}}, "seed"),
                ({"type": "shell", "command": "ls"}, "an unknown command"),
            ]
            for command, problem in commands:
                await ws.send_json(command)
                assert problem in " ".join((await reply(ws, "problem"))["problems"]), command
            await ws.send_str("not json")
            assert (await reply(ws, "problem"))["problems"] == ["an unknown command"]
            assert (await frame(ws))["frame"] > before

    run(test, studio(tmp_path))


def test_save_writes_the_preset_and_its_frames_into_the_output_folder_only(tmp_path):
    live = studio(tmp_path)

    async def test(client):
        async with client.ws_connect("/ws") as ws:
            await frame(ws)
            await ws.send_json({"type": "pause"})
            await reply(ws, "paused")
            await ws.send_json({"type": "save"})
            saved = await reply(ws, "saved")
            assert saved["name"] == "tiny-live-1" and saved["frames"] >= 1
            files = {f["name"]: f["index"] for f in saved["files"]}
            text = await (await client.get(f"/files/{files['tiny-live-1.yaml']}")).text()
            assert "name: tiny-live-1" in text
            shown = json.loads(await (await client.get(f"/files/{files['tiny-live-1.frames.json']}")).text())
            assert len(shown["frames"]) == saved["frames"]
            await ws.send_json({"type": "restart", "settings": {"seed": 9, "palette.names": "viridis"}})
            await reply(ws, "controls")
            await ws.send_json({"type": "save"})  # the new performance has shown nothing yet
            assert "nothing to save yet" in (await reply(ws, "problem"))["problems"][0]

    run(test, live)
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["out/tiny-live-1.frames.json", "out/tiny-live-1.yaml"]


def test_render_renders_the_saved_preset_in_the_background(tmp_path):
    async def test(client):
        async with client.ws_connect("/ws") as ws:
            await frame(ws)
            await ws.send_json({"type": "render"})
            started = await reply(ws, "rendering")
            done = await reply(ws, "rendered")
            assert done["error"] is None
            names = [f["name"] for f in done["files"]]
            assert names == [f"{started['name']}-s3.png", f"{started['name']}-s3.json"]
            png = await client.get(f"/files/{done['files'][0]['index']}")
            assert png.status == 200 and (await png.read())[:4] == b"\x89PNG"

    run(test, studio(tmp_path))


def imaged(folder) -> dict:
    """The tiny preset with walls, a starting trail, a food image and an image spawn, its images
    in folder/images and named relative to folder (where the preset file lies)."""
    images = folder / "images"
    images.mkdir(parents=True)
    walls = np.zeros((32, 48), np.uint8)
    walls[12:20, 20:23] = 255
    Image.fromarray(walls).save(images / "walls.png")
    Image.fromarray(np.tile(np.arange(48, dtype=np.uint8) * 5, (32, 1))).save(images / "glow.png")
    return tiny_data(
        name="walled",
        agents={"count": 400, "spawn": "image", "image": "images/glow.png"},
        world={
            "walls": {"path": "images/walls.png"},
            "trail_image": {"path": "images/glow.png", "scale": 2},
            "food": {"image": {"path": "images/glow.png", "amount": 0.5}},
        },
        output={"formats": ["png"]},
    )


def test_a_saved_preset_finds_its_images_from_any_working_directory(tmp_path, monkeypatch):
    """The preset file in project/presets, its images beside it, saved from project (the working
    directory) into project/live/out: the saved file names its images relative to its own
    folder, and rendered from another working directory it gives the frames shown."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "presets").mkdir(parents=True)
    elsewhere.mkdir()
    source = project / "presets" / "walled.yaml"
    source.write_text(yaml.safe_dump(imaged(project / "presets")))
    monkeypatch.chdir(project)
    live = Studio(Performance.of(load_preset(source)), Path("live/out"), backend="torch", device="cpu")

    async def test(client):
        async with client.ws_connect("/ws") as ws:
            while (await frame(ws))["frame"] < 2:
                pass
            await ws.send_json({"type": "pause"})
            await reply(ws, "paused")
            await ws.send_json({"type": "save"})
            assert (await reply(ws, "saved"))["name"] == "walled-live-1"

    run(test, live)
    monkeypatch.chdir(elsewhere)
    saved = project / "live" / "out" / "walled-live-1.yaml"
    data = yaml.safe_load(saved.read_text())
    assert data["world"]["walls"]["path"] == "../../presets/images/walls.png"
    assert (
        data["agents"]["image"] == data["world"]["food"]["image"]["path"] == "../../presets/images/glow.png"
    )
    recorded = load_preset(saved)
    assert recorded.world.walls.path == str(project / "presets" / "images" / "walls.png")
    with FrameStream(recorded, backend="torch", device="cpu") as stream:
        frames = [hashlib.sha256(f.rgb.tobytes()).hexdigest() for f in stream]
    shown = json.loads((project / "live" / "out" / "walled-live-1.frames.json").read_text())["frames"]
    assert frames == [sha for _, _, sha in shown] and len(set(frames)) > 1


def test_saved_paths_are_relative_to_the_saved_files_folder_for_images_and_sound(tmp_path):
    dump = {
        "audio": {"path": "/music/beat.flac"},
        "world": {"walls": {"path": "/work/images/walls.png"}, "food": {"image": {"path": "/carried.png"}}},
        "agents": {"image": "/work/presets/glow.png"},
    }
    saved = saved_in(dump, Path("/work/live/out"), keep=("/carried.png",))
    assert saved["audio"]["path"] == "../../../music/beat.flac"
    assert saved["world"]["walls"]["path"] == "../../images/walls.png"
    assert saved["world"]["food"]["image"]["path"] == "/carried.png"  # carried: no file, as named
    assert saved["agents"]["image"] == "../../presets/glow.png"
    assert dump["agents"]["image"] == "/work/presets/glow.png"  # the dump itself unchanged
