"""One driver at a time per sweep: a local folder's lock (an flock on OUT/<sweep>/.lock, which
the kernel releases on any exit) and a store's (a lock object URL/<sweep>/.lock).

A store has no flock. The lock object is created by a conditional write (S3: a PUT with
If-None-Match, which exactly one of two drivers started at once wins; base/storage.py
`create_bytes`) and holds its driver's host, process and times as JSON. Its driver renews it every
RENEW_SECONDS (a conditional PUT on the version it wrote last) and removes it at the end; a
driver killed (SIGKILL, its machine lost) leaves it. The rule for such a stale lock: a lock not
renewed for STALE_SECONDS (by the clocks of the two machines), or one whose driver ran on this
machine (the same host name and boot) and is no longer running, is taken over, atomically (a PUT
on the version read: of two drivers taking it at once, one wins), with one line saying whose it
was. Any other lock refuses the sweep with one message naming its driver and how to remove it by
hand. A driver whose renewal finds the lock changed (taken over while it stalled, or removed by
hand) has lost it: its next manifest store stops the sweep (StoredManifest's guard), so two
drivers never store the manifest over each other's."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from datetime import UTC, datetime
from pathlib import Path

from ..base.errors import RenderError, printable
from ..base.files import parse_json
from ..base.inputs import shorten
from ..base.locks import LockHeld, NameLock, holder
from ..base.storage import ObjectStore

LOCK = ".lock"  # the lock's name in the sweep's folder: a file locally, an object in a store
LOCK_BYTES = 4096  # a lock object is read up to this size (its JSON is about 200 bytes)
RENEW_SECONDS = 60.0  # how often a driver renews its lock object
STALE_SECONDS = 600.0  # a lock object not renewed for this long is taken over


class SweepLock:
    """One sweep at a time per output folder: base/locks.py's NameLock on OUT/<sweep>/.lock (an
    flock the kernel releases on any exit; a link or FIFO at its name is refused, never
    followed), refused with one message naming the running sweep's process."""

    def __init__(self, folder: Path):
        self.path = folder / LOCK
        self.lock = NameLock(self.path)

    def __enter__(self):
        try:
            self.lock.take()
        except LockHeld as held:
            who = "" if held.pid is None else f" (process {held.pid})"
            raise RenderError(f"{self.path.parent}: another sweep is running in this folder{who}") from None
        return self

    def __exit__(self, *exc):
        self.lock.release()


def running_sweep(folder: Path) -> str | None:
    """Who holds the sweep lock of a local `folder` now, in words ("process N"), or None where
    no sweep runs there or the OS does not say; takes nothing (base/locks.holder)."""
    pid = holder(folder / LOCK)
    return None if pid is None else f"process {pid}"


def running_store_sweep(store: ObjectStore, stale: float = STALE_SECONDS) -> str | None:
    """Who holds the lock object of a sweep in `store`, in words, where it is held and not stale
    (a run now would be refused); None otherwise. Reads the lock, takes nothing."""
    stranger = "its lock is no sweep lock this physarum reads"  # refused by a run, never taken over
    try:
        held = store.read_versioned(LOCK, LOCK_BYTES)
    except ValueError:  # larger than any lock
        return stranger
    if held is None:
        return None
    found = read_holder(held[0])
    if found is None:
        return stranger
    if stale_reason(found, stale) is not None:
        return None
    return f"its driver: process {found['pid']} on {found['machine'].split(' ')[0]}, lock renewed {found['renewed']}"


def now() -> datetime:
    return datetime.now(UTC)


def machine() -> str:
    """This machine as a lock names it: its host name and, where Linux says, its boot's id (a
    process number means the same process only within one boot of one host)."""
    boot = ""
    with contextlib.suppress(OSError):
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return f"{socket.gethostname()} {boot}".strip()


def running(pid: int) -> bool:
    """Whether a process of this number runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: running
        return True
    return True


class StoreLock:
    """The lock object of a sweep in a store (see the module's text): taken on entry (RenderError
    where another driver holds it), renewed on a thread, removed on exit where still this
    driver's. check() raises RenderError once the lock is lost. `log` says a takeover."""

    def __init__(self, store: ObjectStore, log, renew: float | None = None, stale: float | None = None):
        self.store, self.log = store, log
        self.renew = RENEW_SECONDS if renew is None else renew
        self.stale = STALE_SECONDS if stale is None else stale
        self.url = f"{store.url}/{LOCK}"
        self.started = now().isoformat(timespec="seconds")
        self.version: str | None = None
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def body(self) -> bytes:
        """The lock's JSON: this driver's machine, process and times."""
        record = {
            "sweep_lock": 1,
            "machine": machine(),
            "pid": os.getpid(),
            "started": self.started,
            "renewed": now().isoformat(timespec="seconds"),
        }
        return json.dumps(record).encode("utf-8")

    def __enter__(self) -> StoreLock:
        self.version = self.store.create_bytes(LOCK, self.body())
        if self.version is None:
            self._take_over()
        self._thread = threading.Thread(target=self._renewing, name="sweep-lock", daemon=True)
        self._thread.start()
        return self

    def _take_over(self) -> None:
        """The lock of another driver taken where it is stale (stale_reason); RenderError naming
        its driver otherwise, or where another driver took it first."""
        held = self._held()
        if held is None:  # removed since: taken as new
            self.version = self.store.create_bytes(LOCK, self.body())
        else:
            holder, version = held
            reason = stale_reason(holder, self.stale)
            if reason is None:
                raise RenderError(self.refusal(holder))
            self.version = self.store.replace_bytes(LOCK, self.body(), version)
            if self.version is not None:
                self.log(f"{self.url}: took over the lock of a sweep whose driver {reason}")
        if self.version is None:  # another driver took it between
            raise RenderError(self.refusal((self._held() or (None, ""))[0]))

    def _held(self) -> tuple[dict | None, str] | None:
        """The lock object's holder (read_holder; None for bytes that are no lock, a larger
        object included) and version, or None where there is no lock object."""
        try:
            held = self.store.read_versioned(LOCK, LOCK_BYTES)
        except ValueError:  # larger than any lock
            return None, ""
        return None if held is None else (read_holder(held[0]), held[1])

    def refusal(self, holder: dict | None) -> str:
        """The message of a sweep refused by another driver's lock."""
        who = (
            f"its driver: process {holder['pid']} on {holder['machine'].split(' ')[0]}, started "
            f"{holder['started']}, its lock renewed {holder['renewed']}"
            if holder
            else "its lock is no sweep lock this physarum reads"
        )
        return printable(
            f"{self.store.url}: another sweep is running into this URL ({who}): two drivers would "
            f"render and store the same jobs. A lock not renewed for {self.stale:g} s is taken over, "
            f"as is one whose driver ran on this machine and has ended; if that driver is gone, "
            f"remove {self.url} and run again"
        )

    def _renewing(self) -> None:
        """Renew the lock every `renew` seconds until stopped or lost; a store that refuses a
        renewal is asked again at the next (the lock goes stale only after `stale`)."""
        while not self._stop.wait(self.renew):
            try:
                version = self.store.replace_bytes(LOCK, self.body(), self.version)
            except RenderError:
                continue
            if version is None:
                self.lost = "another driver took it over, or it was removed"
                return
            self.version = version

    def check(self) -> None:
        """RenderError where this driver lost its lock: it stores nothing more."""
        if self.lost:
            raise RenderError(
                f"{self.url}: this sweep's lock was lost ({self.lost}); it stopped before storing "
                "its manifest over another driver's: run it again when no other sweep runs into this URL"
            )

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.version is not None and not self.lost:
            with contextlib.suppress(RenderError):  # a lock left behind goes stale
                self.store.remove_if(LOCK, self.version)


def read_holder(data: bytes) -> dict | None:
    """A lock object's JSON as its holder (machine, pid, started, renewed, its age in seconds,
    whether it ran here), or None where it is no lock this physarum wrote (read from the store:
    a stranger's bytes, bounded by LOCK_BYTES)."""
    try:
        record = parse_json(data.decode("utf-8"))
        renewed = datetime.fromisoformat(record["renewed"])
    except (ValueError, TypeError, KeyError):
        return None
    pid, host, started = record.get("pid"), record.get("machine"), record.get("started")
    if renewed.tzinfo is None or not (isinstance(host, str) and isinstance(started, str)):
        return None
    if not isinstance(pid, int) or isinstance(pid, bool) or pid < 1:
        return None
    return {
        "machine": shorten(host, 120),
        "pid": pid,
        "started": shorten(started, 40),
        "renewed": renewed.isoformat(timespec="seconds"),
        "age": (now() - renewed).total_seconds(),
        "here": host == machine(),
    }


def stale_reason(holder: dict | None, stale: float) -> str | None:
    """Why a lock may be taken over (the words after 'whose driver'), or None where it may not:
    not renewed for `stale` seconds, or its driver ran on this machine and has ended."""
    if holder is None:
        return None
    if holder["age"] >= stale:
        return f"renewed it last {holder['renewed']}, {holder['age']:.0f} s ago (process {holder['pid']})"
    if holder["here"] and not running(holder["pid"]):
        return f"(process {holder['pid']} on this machine, started {holder['started']}) has ended"
    return None
