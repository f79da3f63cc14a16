"""Stopping a render on a signal: SIGTERM and SIGHUP end `physarum render` the way Ctrl-C does,
at the next frame, with the same clean-up (no partial file is left, earlier files stay). While a
render's files are uploaded to an object store, all three wait for the upload in flight
(signals_deferred), so that the store's earlier files are put back whole."""

from __future__ import annotations

import contextlib
import signal
import threading


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a render, raised in the main thread like Ctrl-C's
    KeyboardInterrupt so that the same clean-up runs (no partial file is left)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# The signal a render was asked to stop by (SIGTERM, SIGHUP), raised as Terminated at the next
# frame: raising in the handler itself could land anywhere, e.g. between creating a partial file
# and recording it for the clean-up (the file would be left) or inside a lock.
stop_requested: list[int] = []


def stop_if_requested() -> None:
    """Raise Terminated where signals_interrupt's handler recorded a signal."""
    if stop_requested:
        raise Terminated(stop_requested[0])


@contextlib.contextmanager
def signals_interrupt():
    """Within: SIGTERM and SIGHUP stop a render as SIGINT does (main thread only; elsewhere
    nothing changes): the handler records the signal and the frame loop raises Terminated at the
    next frame, so that the same clean-up as Ctrl-C's runs. The earlier handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum, frame):
        stop_requested.append(signum)

    kinds = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    earlier = {kind: signal.signal(kind, terminated) for kind in kinds}
    try:
        yield
        stop_if_requested()  # a signal after the last frame: the render is complete, still say so
    finally:
        stop_requested.clear()
        for kind, handler in earlier.items():
            signal.signal(kind, handler)


class Deferred:
    """The signals a `signals_deferred` block received, in order; `check()` raises the first."""

    def __init__(self):
        self.received: list[int] = []
        self.raised = False

    def record(self, signum, frame) -> None:
        self.received.append(signum)

    def check(self) -> None:
        """Raise the first signal received (once): SIGINT as Ctrl-C's KeyboardInterrupt, SIGTERM
        and SIGHUP as Terminated."""
        if self.received and not self.raised:
            self.raised = True
            signum = self.received[0]
            raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)


@contextlib.contextmanager
def signals_deferred():
    """Within: SIGINT, SIGTERM and SIGHUP are recorded, not raised (main thread only; elsewhere
    nothing changes), so that a step cut in the middle would leave a mix (an upload of a render's
    files: storage.ObjectStore.put_together) runs its parts whole; it calls the yielded
    Deferred's `check()` between them, which raises the first signal received. The earlier
    handlers come back at the end, and a signal not raised yet is raised then."""
    deferred = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield deferred
        return
    kinds = [getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)]
    earlier = {kind: signal.signal(kind, deferred.record) for kind in kinds}
    try:
        yield deferred
    finally:
        for kind, handler in earlier.items():
            signal.signal(kind, handler)
    deferred.check()
