"""The live page's server (aiohttp: HTTP and WebSocket in one asyncio server; docs/live.md says
why): the page and its script, one WebSocket per page for frames and controls, and the files the
server itself wrote.

Frames go to every page as binary WebSocket messages: a 4-byte big-endian length, a JSON header
(segment, frame, step, width, height, sha256 of the exact RGB frame) and the frame as JPEG. The
pages send JSON commands: set, restart, pause, resume, step, save, render, clock. The server:

- binds 127.0.0.1 unless told otherwise; bound elsewhere it requires a random token in every
  URL (`?token=`), and it refuses a WebSocket from a page of another origin everywhere;
- never opens a path a page sends: a page names keys of the preset (checked against the controls)
  and files by the number the server gave them; it writes only into its output folder; the one
  file it serves that it did not write is the preset's own sound file (`/sound`: the file the
  preset's validation checked and decoded, refused once it has changed);
- plays a preset with a sound file to the page's audio clock: the page plays the track in an
  <audio> element and reports its time (`clock`), and the frames follow it (the loop's clock mode);
- gives control to one page at a time (the first; the others watch) unless `shared`;
- runs at most `ahead` frames ahead of a page that says it draws at its own pace (`/ws?ahead=N`,
  as the live page does) and reports each frame drawn (`shown`): the loop waits for a page that
  may control, a watcher behind is skipped to a later frame. Without it the socket's buffers let
  the loop run hundreds of frames ahead of a slow page, whose main thread then drew a backlog it
  never caught up with (a CPU-starved headless Chromium answered nothing for minutes);
- stops on Ctrl-C or SIGTERM: the loop's and the render's threads are stopped and joined.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import ipaddress
import json
import os
import queue
import re
import secrets
import signal
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import WSMsgType, web
from PIL import Image

from ..base.errors import PresetError
from ..base.files import stage, write_json
from .background import BackgroundRender
from .controls import controls
from .record import Performance
from .session import LiveSession, Shown

MAX_MESSAGE = 64 * 1024  # bytes of one command from a page
JPEG_QUALITY = 90
CONTROL = {"set", "restart", "pause", "resume", "step", "save", "render", "clock"}
MAX_AHEAD = 64  # frames the server may run ahead of a page that reports those it has drawn
# the <audio> element's type of a sound file, by its suffix (the browser sniffs the rest)
SOUND_TYPES = {
    ".wav": "audio/wav",
    ".flac": "audio/flac",
    ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4",
    ".aac": "audio/aac",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".opus": "audio/ogg",
}
FILE_NUMBER = re.compile(r"[0-9]{1,9}")  # /files/N: ASCII digits (str.isdigit passes '²', which int refuses)
PAGE_FILES = {"/": ("page.html", "text/html"), "/page.js": ("page.js", "text/javascript")}


def loopback(host: str) -> bool:
    """Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def encoded(shown: Shown, quality: int = JPEG_QUALITY) -> tuple[dict, bytes]:
    """(header, JPEG bytes) of a frame: the header carries the sha256 of its exact RGB frame."""
    header = {
        "segment": shown.segment,
        "frame": shown.number,
        "step": shown.step,
        "height": int(shown.rgb.shape[0]),
        "width": int(shown.rgb.shape[1]),
        "sha256": hashlib.sha256(shown.rgb.tobytes()).hexdigest(),
        "take": shown.take,
    }
    jpeg = io.BytesIO()
    Image.fromarray(shown.rgb).save(jpeg, "JPEG", quality=quality)
    return header, jpeg.getvalue()


def packed(header: dict, payload: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack(">I", len(text)) + text + payload


@dataclass(frozen=True)
class Sound:
    """The preset's sound file as the page gets it: its path (checked and decoded by the preset's
    validation), the identity it had then (`identity`), and its type."""

    path: Path
    stamp: tuple[int, ...]
    kind: str

    @classmethod
    def of(cls, preset) -> Sound | None:
        if preset.audio is None or preset.audio.path is None:
            return None
        path = Path(preset.audio.path)
        kind = SOUND_TYPES.get(path.suffix.lower(), "application/octet-stream")
        return cls(path, identity(path.stat()), kind)

    def problem(self) -> str | None:
        """Why the file is not the one the preset followed any more (gone or changed); None."""
        try:
            stat = self.path.stat()
        except OSError:
            return f"the sound file {self.path.name} is gone: restart physarum live"
        if identity(stat) != self.stamp:
            return f"the sound file {self.path.name} changed after it was read: restart physarum live"
        return None

    def data(self, clock: tuple[int, int] | None) -> dict:
        """What the page needs to play it: its name, type, and the clock's fps and frames."""
        fps, frames = clock
        return {"url": "sound", "name": self.path.name, "type": self.kind, "fps": fps, "frames": frames}


class Pace:
    """How far the server may run ahead of one page that reports each frame it has drawn: at most
    `ahead` frames sent and not yet reported (`shown`)."""

    def __init__(self, ahead: int):
        self.ahead = ahead
        self.unshown = 0

    def has_room(self) -> bool:
        return self.unshown < self.ahead

    def sent(self) -> None:
        self.unshown += 1

    def shown(self) -> None:
        self.unshown = max(0, self.unshown - 1)  # a page's extra reports give it no more than none


def page_pace(request: web.Request) -> Pace | None:
    """The pace a page asks for (`?ahead=N`, 1 to MAX_AHEAD); None for a client that reads as fast
    as its socket (it reports nothing); HTTPBadRequest naming what is allowed otherwise."""
    ahead = request.query.get("ahead")
    if ahead is None:
        return None
    if not FILE_NUMBER.fullmatch(ahead) or not 1 <= int(ahead) <= MAX_AHEAD:
        raise web.HTTPBadRequest(text=f"ahead: a number of frames from 1 to {MAX_AHEAD}")
    return Pace(int(ahead))


def identity(stat: os.stat_result) -> tuple[int, ...]:
    """A file's identity as far as stat tells: its device and inode (a file moved over it is
    another), size, modification time and change time (which no program sets back: a file
    rewritten in place with its old modification time restored is another)."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


@dataclass
class Studio:
    """What the server serves: the live session, its pages, what it has shown and written."""

    performance: Performance
    out_dir: Path
    backend: str = "auto"
    device: str | None = None
    shared: bool = False
    token: str | None = None
    quality: int = JPEG_QUALITY
    clients: list = field(default_factory=list)
    controller: object = None
    shown: dict = field(default_factory=dict)  # (segment, take) -> [[frame, step, sha256], ...] sent
    files: list[Path] = field(default_factory=list)  # what the page may fetch, by index
    paces: dict = field(default_factory=dict)  # page -> Pace, for the pages that report frames drawn
    render_job: BackgroundRender | None = None

    def __post_init__(self):
        self.session: LiveSession | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pool = ThreadPoolExecutor(2, thread_name_prefix="physarum-live-io")
        self.pump_task: asyncio.Task | None = None
        self.room: asyncio.Condition | None = None  # notified when a page reports a frame or leaves
        self.segment_info: dict = {}
        self.recorded = None  # the preset saved last (what "render" renders)
        self.sound = Sound.of(self.performance.preset)

    # -------------------------------------------------------------------------- life

    async def start(self, app: web.Application) -> None:
        self.loop = asyncio.get_running_loop()
        self.room = asyncio.Condition()
        self.session = LiveSession(self.performance, self.backend, self.device, self.event).start()
        self.pump_task = asyncio.create_task(self.pump())

    async def stop(self, app: web.Application) -> None:
        """Stop the render and the loop (their threads joined), then the pages' sockets."""
        await self.loop.run_in_executor(None, self._stop_threads)
        if self.pump_task is not None:
            self.pump_task.cancel()
            try:
                await self.pump_task
            except asyncio.CancelledError:
                pass
        for ws in list(self.clients):
            await ws.close()
        self.pool.shutdown(wait=True)

    def _stop_threads(self) -> None:
        if self.render_job is not None:
            self.render_job.stop()
        if self.session is not None:
            self.session.close()

    def event(self, event: dict) -> None:
        """From the loop's thread: an event for every page."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._event, event)

    def _event(self, event: dict) -> None:
        if event["type"] == "segment":
            self.segment_info = event
        asyncio.ensure_future(self.broadcast(event))

    async def broadcast(self, message: dict) -> None:
        for ws in list(self.clients):
            await self.send(ws, message)

    async def send(self, ws, message: dict) -> None:
        if not ws.closed:
            try:
                await ws.send_json(message)
            except ConnectionError:
                pass

    async def pump(self) -> None:
        """Frames from the loop to every page, encoded on a pool thread. With no page open none
        is taken: the loop waits (its queue full) until a page comes, so none is missed; nor
        while a paced page that may control has `ahead` frames it has not drawn."""
        while True:
            if not self.clients:
                await asyncio.sleep(0.05)
                continue
            async with self.room:
                await self.room.wait_for(self.controllers_have_room)
            item = await self.loop.run_in_executor(self.pool, self._next_frame)
            if item is None:
                continue
            if item == "end":
                return
            header, jpeg = item
            key = (header["segment"], header["take"])
            if key not in self.shown:  # a restart, or a replay after the audio clock went back
                self.shown = {key: []}
            self.shown[key].append([header["frame"], header["step"], header["sha256"]])
            message = packed(header, jpeg)
            for ws in list(self.clients):
                pace = self.paces.get(ws)
                if ws.closed or (pace is not None and not pace.has_room()):
                    continue  # a watcher behind its pace: it is sent a later frame
                try:
                    await ws.send_bytes(message)
                except ConnectionError:
                    continue
                if pace is not None:
                    pace.sent()

    def controllers_have_room(self) -> bool:
        """Whether every paced page that may control can be sent one more frame."""
        return all(pace.has_room() for ws, pace in self.paces.items() if self.may_control(ws))

    async def frame_shown(self, ws) -> None:
        """A page reports a frame drawn: one more may be sent to it."""
        pace = self.paces.get(ws)
        if pace is not None:
            pace.shown()
            async with self.room:
                self.room.notify_all()

    def _next_frame(self):
        try:
            shown = self.session.frames.get(timeout=0.25)
        except queue.Empty:
            return None
        except BaseException:
            return "end"
        if shown is None:
            return "end"
        return encoded(shown, self.quality)

    # -------------------------------------------------------------------------- pages

    def allowed(self, request: web.Request) -> bool:
        """The token where one is required (compared in constant time)."""
        if self.token is None:
            return True
        return secrets.compare_digest(request.query.get("token", ""), self.token)

    async def page(self, request: web.Request) -> web.StreamResponse:
        """The page (behind the token) and its script (code alone, the same for everyone)."""
        if request.path == "/" and not self.allowed(request):
            raise web.HTTPForbidden(text="a token is required: open the URL the server printed")
        name, kind = PAGE_FILES[request.path]
        text = resources.files("physarum.render.live").joinpath(name).read_text(encoding="utf-8")
        return web.Response(text=text, content_type=kind, headers={"Cache-Control": "no-store"})

    async def file(self, request: web.Request) -> web.StreamResponse:
        """A file the server wrote, by the number it gave it (never a path from the page)."""
        if not self.allowed(request):
            raise web.HTTPForbidden(text="a token is required")
        index = request.match_info["index"]
        if not FILE_NUMBER.fullmatch(index) or int(index) >= len(self.files):
            raise web.HTTPNotFound()
        path = self.files[int(index)]
        return web.FileResponse(path, headers={"Content-Disposition": f'inline; filename="{path.name}"'})

    async def sound_file(self, request: web.Request) -> web.StreamResponse:
        """The preset's own sound file (the one its validation read; none from a page's path),
        with ranges for seeking; 404 without one, 409 once the file has changed."""
        if not self.allowed(request):
            raise web.HTTPForbidden(text="a token is required")
        if self.sound is None:
            raise web.HTTPNotFound(text="this preset has no sound file")
        problem = self.sound.problem()
        if problem:
            raise web.HTTPConflict(text=problem)
        headers = {"Content-Type": self.sound.kind, "Cache-Control": "no-store"}
        return web.FileResponse(self.sound.path, headers=headers)

    async def socket(self, request: web.Request) -> web.StreamResponse:
        if not self.allowed(request):
            raise web.HTTPForbidden(text="a token is required")
        origin = request.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != request.host:
            raise web.HTTPForbidden(text="a page of another origin may not connect")
        pace = page_pace(request)
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE, heartbeat=30)
        await ws.prepare(request)
        if self.controller is None:
            self.controller = ws
        if pace is not None:
            self.paces[ws] = pace
        self.clients.append(ws)
        await self.send(ws, self.hello(ws))
        try:
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    continue
                await self.command(ws, message.data)
        finally:
            self.clients.remove(ws)
            self.paces.pop(ws, None)
            if self.controller is ws:
                self.controller = None
            async with self.room:
                self.room.notify_all()  # the pump waits no more for this page
        return ws

    def hello(self, ws) -> dict:
        _, performance = self.session.snapshot()
        return {
            "type": "hello",
            "control": self.may_control(ws),
            "shared": self.shared,
            "controls": [c.data() for c in controls(performance.preset)],
            "segment": self.segment_info,
            "files": self.file_links(),
            "sound": None if self.sound is None else self.sound.data(self.session.clock),
        }

    def may_control(self, ws) -> bool:
        return self.shared or self.controller is ws

    async def command(self, ws, text: str) -> None:
        try:
            data = json.loads(text)
            kind = data.get("type") if isinstance(data, dict) else None
        except ValueError:
            kind = None
        if kind == "shown":  # any page, a watcher too: its pace, no command
            await self.frame_shown(ws)
            return
        if kind not in CONTROL:
            await self.send(ws, {"type": "problem", "problems": ["an unknown command"]})
            return
        if not self.may_control(ws):
            message = "another page controls this session; watch here, or start physarum live with --shared"
            await self.send(ws, {"type": "problem", "problems": [message]})
            return
        try:
            reply = await self.run_command(kind, data)
        except PresetError as error:
            reply = {"type": "problem", "problems": error.problems}
        except (TypeError, ValueError, KeyError) as error:
            reply = {"type": "problem", "problems": [f"{kind}: {error}"]}
        if reply is not None:
            await self.send(ws, reply)

    async def run_command(self, kind: str, data: dict) -> dict | None:
        session = self.session
        if kind == "set":
            key, value = data["key"], data["value"]
            if not isinstance(key, str):
                raise ValueError("a key is a string")
            await self.loop.run_in_executor(self.pool, session.change, key, value)
            return None
        if kind == "restart":
            settings = self.restart_settings(data.get("settings") or {})
            await self.loop.run_in_executor(self.pool, session.restart, settings)
            await self.broadcast(self.hello_all())
            return None
        if kind in ("pause", "resume", "step"):
            {"pause": session.pause, "resume": session.resume, "step": session.step_once}[kind]()
            await self.broadcast({"type": "paused", "paused": kind != "resume"})
            return None
        if kind == "clock":
            session.follow_clock(data.get("time"))
            return None
        if kind == "save":
            return await self.loop.run_in_executor(self.pool, self.save)
        return self.start_render()

    def hello_all(self) -> dict:
        _, performance = self.session.snapshot()
        return {"type": "controls", "controls": [c.data() for c in controls(performance.preset)]}

    def restart_settings(self, settings: dict) -> dict:
        """The settings of a restart: only the restart keys the page shows, as values."""
        if not isinstance(settings, dict):
            raise ValueError("settings are a mapping of key to value")
        _, performance = self.session.snapshot()
        restart_keys = {c.key: c for c in controls(performance.preset) if not c.live}
        out = {}
        for key, value in settings.items():
            if key not in restart_keys:
                raise PresetError([f"{str(key)[:80]!r}: not a key a restart changes"])
            if isinstance(value, dict | list):
                raise PresetError([f"{key}: a single value is needed"])
            out[key] = value
        return out

    # -------------------------------------------------------------------------- files

    def next_name(self, base: str) -> str:
        """base-live-N, N the first number whose preset file is not in the folder yet."""
        stem = re.sub(r"-live-\d+$", "", base)[:50]
        number = 1
        while (self.out_dir / f"{stem}-live-{number}.yaml").exists():
            number += 1
        return f"{stem}-live-{number}"

    def save(self) -> dict:
        """The performance so far as a preset YAML (and the frames shown, with their sha256)."""
        segment, performance = self.session.snapshot()
        shown = next(
            (list(frames) for (shown_segment, _), frames in self.shown.items() if shown_segment == segment),
            [],
        )
        if not shown:
            raise PresetError(["nothing to save yet: no frame of this performance was shown"])
        self.out_dir.mkdir(parents=True, exist_ok=True)
        name = self.next_name(performance.preset.name)
        recorded = performance.recorded(len(shown), name)
        path = self.out_dir / f"{name}.yaml"
        text = recorded.saved_yaml(self.out_dir)
        stage(path, lambda file: file.write(text), "w", encoding="utf-8").commit()
        frames = self.out_dir / f"{name}.frames.json"
        changes = [c.data() for c in performance.changes]
        write_json(frames, {"preset": path.name, "changes": changes, "frames": shown})
        self.recorded = recorded
        return {
            "type": "saved",
            "name": name,
            "frames": len(shown),
            "files": self.register([path, frames]),
        }

    def register(self, paths: list[Path]) -> list[dict]:
        links = []
        for path in paths:
            self.files.append(path)
            links.append({"name": path.name, "index": len(self.files) - 1})
        return links

    def file_links(self) -> list[dict]:
        return [{"name": path.name, "index": index} for index, path in enumerate(self.files)]

    def start_render(self) -> dict:
        """Save, then render the saved preset in the background (one render at a time)."""
        if self.render_job is not None and self.render_job.running:
            raise PresetError(["a render is running; wait until it ends"])
        saved = self.save()
        self.render_job = BackgroundRender(
            self.recorded,
            self.out_dir,
            self.backend,
            self.device,
            lambda done, frames: self.event({"type": "progress", "done": done, "frames": frames}),
            self.rendered,
        )
        return {**saved, "type": "rendering", "frames_total": self.recorded.frames}

    def rendered(self, outputs: dict[str, Path], error: str | None) -> None:
        """From the render's thread: its files (linked in the page) or why it failed."""
        paths = [path for path in outputs.values() if Path(path).is_file()]
        self.event({"type": "rendered", "error": error, "files": self.register(paths)})


def make_app(studio: Studio) -> web.Application:
    app = web.Application(client_max_size=MAX_MESSAGE)
    app.router.add_get("/", studio.page)
    app.router.add_get("/page.js", studio.page)
    app.router.add_get("/ws", studio.socket)
    app.router.add_get("/files/{index}", studio.file)
    app.router.add_get("/sound", studio.sound_file)
    app.on_startup.append(studio.start)
    app.on_shutdown.append(studio.stop)
    return app


async def serve(studio: Studio, host: str, port: int, say=print) -> None:
    """Serve until Ctrl-C or SIGTERM; say(url) once listening (the port it bound: 0 picks one)."""
    app = make_app(studio)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{bound}/" + (f"?token={studio.token}" if studio.token else "")
        say(url)
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stopped.set)
        await stopped.wait()
    finally:
        await runner.cleanup()
