"""GIF frames compressed in worker processes, their blocks handed back in frame order.

Pillow's GIF encoder holds the interpreter lock, so threads of one process compress one frame at
a time; worker processes compress several. A frame's block depends on that frame alone
(render/formats/gif_file.py), so the file is the same bytes whatever the number of workers, serial included.

Each worker is `python -m physarum.render.formats.gif_pool`, which imports numpy, Pillow and render/formats/gif_file.py
only (no torch: it starts in a fraction of a second, and no process is forked from one that holds
CUDA). It reads tasks from stdin and answers each on stdout, in order: a task is a header
(struct TASK), the index frame (raw, or zlib-compressed as a FrameStore keeps it: the worker
decompresses it, so the writer's process only copies bytes) and its 768-byte palette; an answer is the lengths of the block
and of the kept frame (8 bytes each), then the block and the kept frame. A task that keeps its
frame (`keep`: a budgeted GIF's frame store, render/formats/gif_budget.py) has the worker
zlib-compress it too, and one that wants no block (`block` False) has it do only that, so the
writer's thread compresses nothing. One thread per worker sends a task and reads its answer, so
a full pipe never blocks the other side. A worker imports numpy and Pillow as it starts, while
the render's simulation runs, not at its first task.
"""

from __future__ import annotations

import atexit
import os
import queue
import struct
import subprocess
import sys
import threading
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass

from ..base import lazy
from .gif_file import (
    Digits,
    Reduction,
    area_downscale,
    frame_block,
    level_palette,
    reduce_levels,
    weighted_level_palette,
)

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")

# height, width, levels, factor, stride, digit base, flags, delay, packed bytes (0: a raw frame)
TASK = struct.Struct("<IIHHHHBII")
ANSWER = struct.Struct("<QQ")  # the block's bytes, the kept frame's bytes (0: not kept)
KEEP_LEVEL = 1  # zlib level of a kept frame: fast, and index frames shrink many times
# flags: the digit count (at most 4) in bits 0-3, then these
NO_BLOCK, KEEP, WEIGHTED, LOCAL = 0x10, 0x20, 0x40, 0x80
IN_FLIGHT = 2  # tasks per worker queued or being compressed: enough to keep each busy
# Below this many pixels in all frames a GIF is compressed in one process: Pillow compresses about
# 12 Mpixel/s per core (quickstart: 21 Mpixel in 1.7 s), and starting workers takes 0.1-1 s.
PARALLEL_PIXELS = 8_000_000
# Each worker gets at least this many of a GIF's pixels (about 0.3 s of compression): a worker
# costs a process start and its imports (0.1-0.3 s of a core), so a small GIF starts a few, not one
# per core (quickstart's 21 Mpixel: 6 workers, not 16, beside the simulation's frame loop).
PIXELS_PER_WORKER = 4_000_000
# Workers started ahead of their pool (start_ahead), by the thread that started them, oldest
# first: that thread's next CompressPool takes them. By thread, as a worker dies with the thread
# that started it (PR_SET_PDEATHSIG), and renders on several threads of one process (the API)
# must not take each other's.
_ahead: dict[int, list[_Worker]] = {}
_ahead_lock = threading.Lock()


@dataclass(frozen=True)
class FrameTask:
    """One frame to compress: its full index frame [h, w] uint8 and 768-byte palette, the
    reduction, whether its table goes into the frame (local), and the delay in ms. With `shape`,
    `index` is the frame zlib-compressed (FrameStore.packed), of that shape. weighted: the frame
    has its own palette (a 3D frame), whose reduced levels are shown by weighted_level_palette."""

    index: np.ndarray | bytes
    palette: bytes
    reduction: Reduction
    digits: Digits
    local: bool
    delay: int
    shape: tuple[int, int] | None = None
    weighted: bool = False
    keep: bool = False
    block: bool = True

    def frame(self) -> np.ndarray:
        """The index frame [h, w] uint8 (decompressed where packed)."""
        if self.shape is None:
            return self.index
        return np.frombuffer(zlib.decompress(self.index), dtype=np.uint8).reshape(self.shape)


def answer(task: FrameTask) -> bytes | tuple[bytes, bytes]:
    """What a task is answered with: its block (compress), or for a task that keeps its frame
    (block, frame zlib-compressed), the block b"" where none is wanted."""
    if not task.keep:
        return compress(task)
    block = compress(task) if task.block else b""
    return block, zlib.compress(np.ascontiguousarray(task.frame()).data, KEEP_LEVEL)


def compress(task: FrameTask) -> bytes:
    """The frame's block in the GIF (render/formats/gif_file.py): reduced, then compressed."""
    levels = task.reduction.levels
    downscaled = area_downscale(task.frame(), task.reduction.factor, task.digits)
    if task.weighted:
        palette = weighted_level_palette(task.palette, downscaled, levels)
    else:
        palette = level_palette(task.palette, levels)
    return frame_block(reduce_levels(downscaled, levels), palette, task.local, task.delay)


def pool_size(jobs: int = 1, pixels: int | None = None) -> int:
    """Workers for one GIF when `jobs` GIFs are written at once: the cores this process may run
    on, shared between them (1: compress in this process). pixels: the GIF's frames' pixels in
    all; below PARALLEL_PIXELS, 1 (starting workers would cost more than it saves), else at most
    one per PIXELS_PER_WORKER of them. The bytes are the same whatever the count."""
    if pixels is not None and pixels < PARALLEL_PIXELS:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    share = max(1, cores // max(1, jobs))
    return share if pixels is None else max(1, min(share, -(-pixels // PIXELS_PER_WORKER)))


class _Worker:
    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "physarum.render.formats.gif_pool"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def compress(self, task: FrameTask) -> bytes | tuple[bytes, bytes]:
        r = task.reduction
        packed = task.shape is not None
        height, width = task.shape if packed else task.index.shape
        data = task.index if packed else np.ascontiguousarray(task.index).data
        flags = task.digits.count | WEIGHTED * task.weighted | LOCAL * task.local
        flags |= KEEP * task.keep | NO_BLOCK * (not task.block)
        head = TASK.pack(
            height,
            width,
            r.levels,
            r.factor,
            r.stride,
            task.digits.base,
            flags,
            task.delay,
            len(data) * packed,
        )
        try:
            self.process.stdin.write(head)
            self.process.stdin.write(data)
            self.process.stdin.write(task.palette)
            self.process.stdin.flush()
            length, kept = ANSWER.unpack(_read(self.process.stdout, ANSWER.size))
            block = _read(self.process.stdout, length)
            return (block, _read(self.process.stdout, kept)) if task.keep else block
        except (OSError, ValueError) as error:
            raise OSError(f"a GIF compression worker stopped ({error})") from None

    def end(self) -> None:
        """Close its stdin: the worker answers what it holds and exits (see close)."""
        try:
            self.process.stdin.close()
        except OSError:
            pass

    def close(self) -> None:
        self.end()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class CompressPool:
    """Compresses FrameTasks in `size` worker processes (size 1: in this process, no workers)
    and yields the blocks in task order. Close it (or use it as a context manager)."""

    def __init__(self, size: int):
        self.size = size
        self.workers = [_take_worker() for _ in range(size)] if size > 1 else []
        self.idle: queue.Queue = queue.Queue()
        for worker in self.workers:
            self.idle.put(worker)
        self.pending: deque[Future] = deque()

    def ready(self) -> CompressPool:
        """Wait until every worker has started and answered one task (their imports done)."""
        tiny = FrameTask(np.zeros((1, 1), dtype=np.uint8), bytes(768), Reduction(), Digits(), False, 10)
        for _ in self.drain():
            pass
        for _ in self.map([tiny] * max(1, len(self.workers))):
            pass
        return self

    def submit(self, task: FrameTask) -> Iterator[bytes]:
        """Queue one task; yields the blocks of earlier tasks that are done, oldest first, once
        the pool is full (so at most IN_FLIGHT * size tasks are held)."""
        if not self.workers:
            yield answer(task)
            return
        future: Future = Future()
        self.pending.append(future)
        threading.Thread(target=self._run, args=(task, future), daemon=True).start()
        while len(self.pending) > IN_FLIGHT * self.size:
            yield self.pending.popleft().result()

    def drain(self) -> Iterator[bytes]:
        """The blocks of every task still pending, in order."""
        while self.pending:
            yield self.pending.popleft().result()

    def map(self, tasks: Iterable[FrameTask]) -> Iterator[bytes]:
        """Every task's block, in order."""
        for task in tasks:
            yield from self.submit(task)
        yield from self.drain()

    def _run(self, task: FrameTask, future: Future) -> None:
        worker = self.idle.get()
        try:
            future.set_result(worker.compress(task))
        except BaseException as error:
            future.set_exception(error)
        finally:
            self.idle.put(worker)

    def close(self) -> None:
        for future in self.pending:
            try:
                future.result()
            except BaseException:  # the pool is being closed anyway
                pass
        self.pending.clear()
        _close_all(self.workers)
        self.workers = []

    def kill(self) -> None:
        for worker in self.workers:
            worker.kill()
        self.workers = []

    def __enter__(self) -> CompressPool:
        return self

    def __exit__(self, kind, error, trace) -> None:
        if error is None:
            self.close()
        else:
            self.kill()


def start_ahead(size: int) -> None:
    """Start the workers of a pool of `size` that this thread will open later (1: none): its
    next CompressPool takes them rather than starting its own, so that they have imported what
    they need before its first task. A render starts its GIF's before it imports torch (their
    start, 0.4 s for 6 on the GPU host, otherwise falls in its frame loop). Those no pool takes
    are ended by end_ahead, or at the process's exit."""
    with _ahead_lock:
        started = _ahead.get(threading.get_ident(), [])
        while size > 1 and len(started) < size:
            started.append(_Worker())
        if started:
            _ahead[threading.get_ident()] = started


def end_ahead(every_thread: bool = False) -> None:
    """End the workers this thread (every thread's, at the process's exit) started ahead that no
    pool took (a render that failed before its GIF)."""
    with _ahead_lock:
        threads = list(_ahead) if every_thread else [threading.get_ident()]
        workers = [worker for thread in threads for worker in _ahead.pop(thread, [])]
    _close_all(workers)


def _close_all(workers: list[_Worker]) -> None:
    """Close `workers`, every one told to end before any is waited for, so that they exit side
    by side."""
    for worker in workers:
        worker.end()
    for worker in workers:
        worker.close()


def _take_worker() -> _Worker:
    """A worker this thread started ahead that is still running, else a new one."""
    while True:
        with _ahead_lock:
            started = _ahead.get(threading.get_ident(), [])
            worker = started.pop(0) if started else None
            if not started:
                _ahead.pop(threading.get_ident(), None)
        if worker is None:
            return _Worker()
        if worker.process.poll() is None:
            return worker
        worker.kill()


atexit.register(end_ahead, every_thread=True)


def _read(stream, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise OSError(f"truncated: {len(data)} of {size} bytes")
    return data


def main() -> int:
    """A worker: answer every task on stdin until its end (numpy and Pillow imported first, while
    the writer waits for frames: an import at the first task would hold the file's end)."""
    frame_block(np.zeros((1, 1), dtype=np.uint8), bytes(768), False, 10)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while head := stdin.read(TASK.size):
        height, width, levels, factor, stride, base, count, delay, packed = TASK.unpack(_pad(head))
        if packed:
            index, shape = _read(stdin, packed), (height, width)
        else:
            index = np.frombuffer(_read(stdin, height * width), dtype=np.uint8).reshape(height, width)
            shape = None
        palette = _read(stdin, 768)
        task = FrameTask(
            index,
            palette,
            Reduction(levels, factor, stride),
            Digits(base, count & 0x0F),
            bool(count & LOCAL),
            delay,
            shape,
            bool(count & WEIGHTED),
            bool(count & KEEP),
            not count & NO_BLOCK,
        )
        done = answer(task)
        block, kept = done if task.keep else (done, b"")
        stdout.write(ANSWER.pack(len(block), len(kept)))
        stdout.write(block)
        stdout.write(kept)
        stdout.flush()
    return 0


def _pad(head: bytes) -> bytes:
    if len(head) != TASK.size:
        raise OSError(f"truncated task header: {len(head)} of {TASK.size} bytes")
    return head


if __name__ == "__main__":
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the parent
    code = main()
    sys.stdout.flush()
    os._exit(code)  # every answer is written: no teardown of numpy and Pillow for the pool to wait on
