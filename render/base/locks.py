"""A lock on the files of one name: one process at a time writes them (docs/safety.md, "Two
renders of one name").

The lock is fcntl.flock on a small hidden file beside the files, .STEM.lock, holding the PID of
its holder (for the message of a refused process). flock locks belong to the open file and die
with the process that holds them, so a killed render's lock never blocks a later one and no PID
is checked for staleness. The holder removes the file when it releases the lock, while still
holding it; a taker that locked a file since removed or replaced (its inode no longer at the
name) lets it go and tries again, so two processes never hold locks on two files of one name. A
killed holder leaves the file, unlocked: the next taker takes it and removes it in its turn.
The file is opened without following a link (O_NOFOLLOW) and written only when it is a regular
file of one name, so a link or FIFO planted at its name writes nothing elsewhere. Where the OS
has no fcntl (Windows), there is no lock.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock; the names are not locked there
    fcntl = None

_OPEN = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_PID_BYTES = 32  # the most of a lock file read for its holder's PID
_TRIES = 20  # files of one name locked as their holders removed them, before giving up


class LockHeld(Exception):
    """Another process holds the lock at `path` (pid: its PID, None where it wrote none yet)."""

    def __init__(self, path: Path, pid: int | None):
        super().__init__(f"{path}: locked by {'another process' if pid is None else f'process {pid}'}")
        self.path, self.pid = Path(path), pid


class NameLock:
    """The exclusive lock of `path` (.STEM.lock), taken by take() (LockHeld where another
    process, or another lock of this one, holds it; OSError naming the file where the lock file
    cannot be made or is no plain file), released by release() (which removes the file) or by
    the process's end (which leaves it, unlocked)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.descriptor: int | None = None

    def take(self) -> NameLock:
        if fcntl is None:
            return self
        for _ in range(_TRIES):
            descriptor = _open_lock_file(self.path)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _holder(descriptor)
                os.close(descriptor)
                raise LockHeld(self.path, pid) from None
            except BaseException:
                os.close(descriptor)
                raise
            if _still_at_name(descriptor, self.path):
                self.descriptor = descriptor
                os.ftruncate(descriptor, 0)
                os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
                return self
            os.close(descriptor)  # its holder removed it as we locked it: the name's next file
        raise LockHeld(self.path, None)

    def release(self) -> None:
        """Remove the lock file, then let the next process take the name (closing the file
        releases the flock)."""
        if self.descriptor is not None:
            if _still_at_name(self.descriptor, self.path):
                self.path.unlink(missing_ok=True)
            os.close(self.descriptor)
            self.descriptor = None

    def __enter__(self) -> NameLock:
        return self.take()

    def __exit__(self, *exc) -> None:
        self.release()


def holder(path: Path) -> int | None:
    """The PID of the process holding the lock at `path` now, read from Linux's /proc/locks
    without opening the file (a probe that took a lock, even a shared one, could refuse a
    process starting at that moment); None where it is free, missing, no plain file, or the OS
    does not say."""
    try:
        info = os.lstat(path)
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in table.splitlines():
        fields = line.split()  # "1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF"
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device and fields[4].isdigit():
            return int(fields[4])
    return None


def _open_lock_file(path: Path) -> int:
    """The lock file opened for reading and writing, made if missing; refused (OSError naming
    it) where it is a link, not a regular file, or a file of several names (a hard link)."""
    try:
        descriptor = os.open(path, _OPEN, 0o666)
    except OSError as error:
        reason = "a link is at its name" if os.path.islink(path) else error.strerror
        raise OSError(
            error.errno, f"cannot make the lock file: {reason}; remove it and run again", str(path)
        ) from None
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(descriptor)
        raise OSError(
            errno.EEXIST,
            "is not a plain lock file (not a regular file, or a hard link); remove it",
            str(path),
        )
    return descriptor


def _holder(descriptor: int) -> int | None:
    """The PID the lock's holder wrote (None where it wrote none yet)."""
    text = os.pread(descriptor, _PID_BYTES, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def _still_at_name(descriptor: int, path: Path) -> bool:
    """Whether the open file is (still) the file at `path`."""
    try:
        at_name = os.lstat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(descriptor)
    return (at_name.st_dev, at_name.st_ino) == (mine.st_dev, mine.st_ino)
