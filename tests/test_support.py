"""support.py's own machinery: the FIFO whose partner thread lets a reader through."""

from __future__ import annotations

import os
import stat
import threading

from support import end_fifo_partners, fifo


def read_within(path, seconds: float = 30) -> list[bytes]:
    """What reading `path` gave, from a thread given `seconds` (empty where it still hangs)."""
    got = []
    reader = threading.Thread(target=lambda: got.append(path.read_bytes()), daemon=True)
    reader.start()
    reader.join(timeout=seconds)
    return got


def test_a_fifo_lets_each_reader_through_and_its_partner_thread_ends(tmp_path):
    """support.fifo left a thread blocked for ever in open() wherever the code under test never
    opened the FIFO (it refused it first, as it should): such threads piled up in a pytest
    process. The partner now waits without blocking and is ended with the test."""
    before = threading.active_count()
    unread = [fifo(tmp_path / f"unread{n}") for n in range(3)]
    read = fifo(tmp_path / "read")
    assert read_within(read) == [b""]
    assert read_within(read) == [b""]  # a second open of the same FIFO is let through too
    assert threading.active_count() == before + 4  # the four partners, and no reader left
    end_fifo_partners()
    assert threading.active_count() == before
    assert all(stat.S_ISFIFO(os.stat(path).st_mode) for path in [*unread, read])
