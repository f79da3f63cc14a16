"""Frames compressed in worker processes give the blocks of one process, in order."""

from __future__ import annotations

import threading
import zlib
from dataclasses import replace

import numpy as np

from physarum.render.formats import gif_pool
from physarum.render.formats.gif_file import Digits, Reduction
from physarum.render.formats.gif_pool import CompressPool, FrameTask, compress, pool_size
from physarum.render.look.colour import palette_table


def _tasks(count: int) -> list[FrameTask]:
    rng = np.random.default_rng(3)
    palettes = [palette_table("magma").tobytes(), palette_table("ice").tobytes()]
    reductions = [Reduction(), Reduction(64, 2, 1), Reduction(16, 3, 2)]
    return [
        FrameTask(
            rng.integers(0, 256, (40 + i, 61), dtype=np.uint8),
            palettes[i % 2],
            reductions[i % 3],
            Digits(),
            i % 2 == 1,
            40,
        )
        for i in range(count)
    ]


def test_parallel_blocks_are_the_serial_blocks_in_order():
    tasks = _tasks(13)
    serial = [compress(task) for task in tasks]
    with CompressPool(3) as pool:
        assert list(pool.map(tasks)) == serial
    with CompressPool(1) as pool:
        assert list(pool.map(tasks)) == serial


def test_pool_size_shares_the_cores_and_is_at_least_one():
    assert pool_size(1) >= pool_size(2) >= 1
    assert pool_size(10_000) == 1
    assert pool_size(1, pixels=1000) == 1  # a small GIF is not worth starting workers
    # past that, no more workers than the GIF's pixels keep busy (and no more than the cores)
    assert pool_size(1, pixels=21_000_000) == min(pool_size(1), 6)
    assert pool_size(1, pixels=10**12) == pool_size(1)


def test_kept_frames_are_decompressed_by_the_workers_to_the_same_blocks():
    # a FrameStore's frames travel zlib-compressed and the worker decompresses them: the blocks
    # are those of the raw frames, in order, serial or parallel
    tasks = _tasks(7)
    packed = [
        replace(task, index=zlib.compress(task.index.tobytes(), 1), shape=task.index.shape) for task in tasks
    ]
    serial = [compress(task) for task in tasks]
    assert [compress(task) for task in packed] == serial
    with CompressPool(2) as pool:
        assert list(pool.map(packed)) == serial


def test_weighted_tasks_travel_to_the_workers_and_colour_their_groups_by_their_pixels():
    """A frame with its own palette (weighted, a 3D frame's) at reduced levels: the worker
    processes give the serial blocks (the flag crosses the pipe), and they differ from the
    unweighted blocks where a group's pixels are not its middle entry's."""
    tasks = [replace(task, weighted=True, local=True) for task in _tasks(6)]
    serial = [compress(task) for task in tasks]
    with CompressPool(2) as pool:
        assert list(pool.map(tasks)) == serial
    plain = [compress(replace(task, weighted=False)) for task in tasks]
    reduced = [task.reduction.levels < 256 for task in tasks]
    assert [a != b for a, b in zip(serial, plain)] == reduced


def test_a_task_that_keeps_its_frame_gets_it_back_zlib_compressed_with_its_block():
    """A budgeted GIF's frames are kept (zlib) and their first blocks made by the workers, not the
    writer's thread: each answer is (block, the frame compressed), in order, serial or parallel;
    a task that wants no block (the first candidate passed its budget) gets b"" and the frame."""
    tasks = [replace(task, keep=True, block=n % 3 != 2) for n, task in enumerate(_tasks(9))]
    with CompressPool(1) as serial_pool:
        serial = list(serial_pool.map(tasks))
    with CompressPool(2) as pool:
        assert list(pool.map(tasks)) == serial
    for task, (block, kept) in zip(tasks, serial):
        assert block == (compress(task) if task.block else b"")
        assert zlib.decompress(kept) == task.index.tobytes()


def test_closing_the_pool_ends_every_worker_cleanly_after_its_last_answer():
    tasks = _tasks(7)
    pool = CompressPool(3)
    processes = [worker.process for worker in pool.workers]
    for task in tasks:  # tasks left pending: close answers them before the workers are told to end
        list(pool.submit(task))
    pool.close()
    assert [process.returncode for process in processes] == [0, 0, 0]
    assert pool.workers == [] and not pool.pending


def test_a_pool_takes_the_workers_started_ahead_and_starts_only_the_rest():
    tasks = _tasks(5)
    gif_pool.start_ahead(2)
    ahead = [worker.process for worker in gif_pool._ahead[threading.get_ident()]]
    assert len(ahead) == 2 and all(process.poll() is None for process in ahead)
    with CompressPool(3) as pool:
        taken = [worker.process for worker in pool.workers]
        assert taken[:2] == ahead and taken[2] not in ahead  # the third is started by the pool
        assert list(pool.map(tasks)) == [compress(task) for task in tasks]
    assert gif_pool._ahead == {}


def test_workers_started_ahead_that_no_pool_takes_are_ended_and_a_dead_one_is_passed_over():
    gif_pool.start_ahead(1)  # a pool of 1 compresses in its process: none is started
    assert gif_pool._ahead == {}
    gif_pool.start_ahead(3)
    processes = [worker.process for worker in gif_pool._ahead[threading.get_ident()]]
    processes[0].kill()
    processes[0].wait()
    with CompressPool(2) as pool:  # the dead one passed over, the two others taken
        assert [worker.process for worker in pool.workers] == processes[1:]
    gif_pool.start_ahead(2)
    unused = [worker.process for worker in gif_pool._ahead[threading.get_ident()]]
    gif_pool.end_ahead()
    assert gif_pool._ahead == {} and [process.returncode for process in unused] == [0, 0]


def test_a_pool_takes_only_the_workers_its_own_thread_started_ahead():
    """A worker dies with the thread that started it: renders on two threads keep their own."""
    other = threading.Thread(target=gif_pool.start_ahead, args=(2,))
    other.start()
    other.join()  # its workers died with it (PR_SET_PDEATHSIG on Linux) or stay running
    theirs = [worker.process for worker in gif_pool._ahead[other.ident]]
    with CompressPool(2) as pool:
        assert not {worker.process for worker in pool.workers} & set(theirs)
    gif_pool.end_ahead(every_thread=True)
    assert gif_pool._ahead == {} and all(process.poll() is not None for process in theirs)
