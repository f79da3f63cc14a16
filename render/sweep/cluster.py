"""Where chunks run on a Ray cluster: one Ray task per chunk (an executor as in workers.py) that
needs nothing on a worker but the installed package.

- Each task's payload carries its jobs' presets as their portable dumps and the world images
  they read as a carried block (render/preset/carried.py, what outputs carry for `--from`), so
  that no worker reads a file of the driver's (chunk.payload_preset).
- A task renders into a temporary folder of its own worker (physarum-sweep-PID-*) and removes it
  when it ends; those of killed workers are removed by the next task on their machine.
- Its committed files reach the sweep's store (base/storage.py) one of two ways (`files`):
  "driver" (the default): the task is a Ray generator that yields each job's outcome (with each
  file's size and sha256) and then its files in pieces of FILE_PIECE bytes; the driver writes
  them into staging files, checks each file's size and sha256, and commits a job's files when
  all of them arrived. At most BACKPRESSURE pieces of a task wait unread, so the driver holds a
  piece at a time and a batch's files never sit in its memory. The workers need no access to
  the destination at all.
  "workers": each task stores its jobs' files itself (a shared folder, written in place as
  always; or object storage, uploaded by the worker: it needs the store's credentials).
- A task that fails (its worker process or node died, the object store lost its pieces) is run
  again for the jobs whose files did not land, up to max_attempts in all (the manifest's
  records say `attempt` and `max_attempts`); Ray's own retries are off, so a job's pieces never
  come from two attempts. A job's files are committed once, from one attempt, whole. A failure
  of the render itself (a job's error) is not retried: it is the job's outcome.
- A store that refuses a write is a RenderError naming the URL (the sweep stops; what was
  committed stays, and the manifest names it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import RenderError
from ..base.files import process_running
from ..base.storage import Staged, Store, described, open_store
from ..preset import carried
from ..preset.provenance import carried_images
from .chunk import chunk_outcomes, failed_outcomes
from .plan import FILES, MAX_ATTEMPTS

FILE_PIECE = 8 << 20  # bytes of a file per streamed object
BACKPRESSURE = 8  # streamed objects a task may produce ahead of the driver


def ray_connect(address: str):
    """The ray module, connected: to a running cluster ('auto' or its address), to a new local
    instance ('local'), or as already initialised by the caller (tests do that)."""
    try:
        import ray
    except ImportError:
        raise RenderError("--ray needs Ray: pip install 'physarum[ray]'") from None
    if not ray.is_initialized():
        try:
            if address == "local":
                ray.init(include_dashboard=False)
            else:
                ray.init(address=address)
        except ConnectionError as error:
            raise RenderError(f"--ray {address}: cannot connect: {error}") from None
    return ray


def ray_workers(ray) -> int:
    """How many chunks a Ray cluster runs at once (its GPUs, or its CPUs where it has none)."""
    resources = ray.cluster_resources()
    return max(1, int(resources.get("GPU", 0) or resources.get("CPU", 1)))


def ray_payloads(chunks) -> list[list[dict]]:
    """Each chunk's payload for a Ray task: every job's id, portable dump and carried images (one
    text object per distinct block, so that a task's arguments carry it once)."""
    blocks: dict[str, str] = {}
    payloads = []
    for chunk in chunks:
        items = []
        for job in chunk:
            text = carried.block(carried_images(job.preset))
            items.append(
                {
                    "id": job.id,
                    "preset": job.preset.portable_dump(),
                    "images": blocks.setdefault(text, text) if text else None,
                }
            )
        payloads.append(items)
    return payloads


def _work_folder() -> Path:
    """A new temporary folder of this worker process (physarum-sweep-PID-*), after removing those
    of worker processes that are gone (a worker killed mid-task leaves its folder behind)."""
    for folder in Path(tempfile.gettempdir()).glob("physarum-sweep-*-*"):
        pid = folder.name.split("-")[2]
        if pid.isdigit() and not process_running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"physarum-sweep-{os.getpid()}-")).resolve()


def _node() -> str:
    import ray  # start-up: in a Ray task, where Ray is imported

    return ray.get_runtime_context().get_node_id()


def _stream_chunk(chunk: list[dict], device: str, backend: str):
    """A Ray task (a generator): the chunk rendered into a temporary folder of this worker; for
    each job its outcome (with `files`: size and sha256 of each), then its files' bytes in
    order, in pieces of FILE_PIECE."""
    folder = _work_folder()
    try:
        node = _node()
        for outcome in chunk_outcomes(chunk, str(folder), device, backend, True):
            outcome["node"] = node
            rels = list((outcome.get("outputs") or {}).values()) if outcome["status"] == "done" else []
            try:
                outcome["files"] = described(folder, rels)
            except OSError as error:
                outcome = {**failed_outcomes([outcome], error, device)[0], "node": node}
                rels = []
            yield outcome
            for rel in rels:
                with open(folder / rel, "rb") as file:
                    while piece := file.read(FILE_PIECE):
                        yield piece
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _store_chunk(chunk: list[dict], destination: str, device: str, backend: str) -> list[dict]:
    """A Ray task: the chunk rendered and its files stored by this worker, in place in a shared
    folder or uploaded to object storage from a temporary folder; one outcome per job. A store
    that refuses a write fails the job with `refused` set (the driver stops the sweep)."""
    store = open_store(destination)
    node = _node()
    if store.local:  # a shared folder every machine mounts: written in place
        outcomes = chunk_outcomes(chunk, str(store.root), device, backend, True)
        return [{**outcome, "node": node} for outcome in outcomes]
    folder = _work_folder()
    try:
        outcomes = chunk_outcomes(chunk, str(folder), device, backend, True)
        for outcome in outcomes:
            outcome["node"] = node
            if outcome["status"] != "done":
                continue
            rels = list(outcome["outputs"].values())
            try:
                outcome["files"] = described(folder, rels)
                for rel in rels:
                    store.put_file(folder / rel, rel)
            except (RenderError, OSError) as error:
                outcome.update(status="failed", error=str(error), refused=True)
        return outcomes
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        getattr(store, "close", lambda: None)()


@dataclass
class _Attempt:
    """One run of a chunk's task: the jobs it still owes, and the job whose files are arriving."""

    number: int
    attempt: int
    payload: list[dict]
    stream: object  # an ObjectRefGenerator ("driver") or an ObjectRef ("workers")
    owed: set[str] = field(default_factory=set)
    outcome: dict | None = None
    files: list[tuple[str, dict]] = field(default_factory=list)  # still to arrive, in order
    staged: list[Staged] = field(default_factory=list)
    writing: object = None  # the open staging file
    digest: object = None
    left: int = 0  # bytes of the current file still to arrive

    def discard(self) -> None:
        if self.writing is not None:
            self.writing.close()
            self.writing = None
        for staged in self.staged:
            staged.discard()
        self.staged, self.outcome, self.files = [], None, []


def run_ray(
    ray,
    payloads,
    store: Store,
    backend,
    on_start,
    on_done,
    files: str = "driver",
    max_attempts: int = MAX_ATTEMPTS,
    log=None,
) -> None:
    """Every chunk as a Ray task (one GPU each where the cluster has GPUs, else CPU-only), its
    files into `store` as `files` says; on_start(number) when a chunk's task is submitted,
    on_done(number, outcomes) as jobs land (see the module's text)."""
    if files not in FILES:
        raise RenderError(f"files: one of {', '.join(FILES)}, not {files!r}")
    if max_attempts < 1:
        raise RenderError(f"max_attempts must be at least 1, got {max_attempts}")
    log = log or (lambda line: None)
    gpus = ray.cluster_resources().get("GPU", 0)
    device = "cuda" if gpus else "cpu"  # Ray sets CUDA_VISIBLE_DEVICES to the task's GPU
    options = {"num_gpus": 1 if gpus else 0, "num_cpus": 1, "max_retries": 0}
    if files == "driver":
        task = ray.remote(**options)(_stream_chunk).options(
            num_returns="streaming", _generator_backpressure_num_objects=BACKPRESSURE
        )
    else:
        task = ray.remote(**options, retry_exceptions=False)(_store_chunk)
        destination = store.url

    def submit(number: int, attempt: int, payload: list[dict]) -> _Attempt:
        if files == "driver":
            stream = task.remote(payload, device, backend)
        else:
            stream = task.remote(payload, destination, device, backend)
        return _Attempt(number, attempt, payload, stream, {item["id"] for item in payload})

    running: dict[object, _Attempt] = {}
    for number, payload in enumerate(payloads):
        run = submit(number, 1, payload)
        running[run.stream] = run
        on_start(number)

    def land(run: _Attempt, outcomes: list[dict]) -> None:
        for outcome in outcomes:
            run.owed.discard(outcome["id"])
            outcome.update(attempt=run.attempt, max_attempts=max_attempts)
        on_done(run.number, outcomes)

    def failed(run: _Attempt, error: BaseException) -> None:
        """The attempt died: its unlanded jobs run again, or fail after max_attempts."""
        run.discard()
        owed = [item for item in run.payload if item["id"] in run.owed]
        if not owed:
            return
        reason = f"Ray task failed: {type(error).__name__}: {_first_line(error)}"
        if run.attempt < max_attempts:
            log(
                f"batch {run.number + 1}: {reason}; running its {len(owed)} unfinished jobs again "
                f"(attempt {run.attempt + 1} of {max_attempts})"
            )
            again = submit(run.number, run.attempt + 1, owed)
            running[again.stream] = again
        else:
            land(run, failed_outcomes(owed, f"{reason} (after {max_attempts} attempts)", device))

    while running:
        ready, _ = ray.wait(list(running), num_returns=1)
        run = running[ready[0]]
        if files == "workers":
            del running[ready[0]]
            try:
                outcomes = ray.get(ready[0])
            except Exception as error:  # the task died: its worker or node
                failed(run, error)
                continue
            refused = [o for o in outcomes if o.pop("refused", False)]
            if refused:
                _cancel(ray, running)
                raise RenderError(refused[0]["error"])
            land(run, outcomes)
            continue
        try:
            reference = next(run.stream)
        except StopIteration:
            del running[ready[0]]
            if run.owed:  # the stream ended early: treat as a failed attempt
                failed(run, RuntimeError("the task's stream ended before its jobs' files"))
            continue
        try:
            item = ray.get(reference)
        except Exception as error:  # the task died (worker, node) or raised
            del running[ready[0]]
            failed(run, error)
            continue
        finally:
            del reference
        try:
            _receive(run, item, store, land)
        except _Damaged as error:
            del running[ready[0]]
            _cancel(ray, {run.stream: run})
            failed(run, error)
        except BaseException:
            run.discard()
            _cancel(ray, running)
            raise


class _Damaged(Exception):
    """A piece that does not fit what the outcome announced (size, sha256, order)."""


def _receive(run: _Attempt, item, store: Store, land) -> None:
    """One streamed object of `run`: a job's outcome (dict) or a piece of its current file."""
    if isinstance(item, dict):
        if run.outcome is not None:
            raise _Damaged(f"{run.outcome['id']}: a new outcome before its files ended")
        if item.get("status") != "done" or not item.get("files"):
            land(run, [item])
            return
        run.outcome, run.files = item, list(item["files"].items())
        _next_file(run, store, land)
        return
    if run.writing is None or not isinstance(item, bytes) or len(item) > run.left:
        raise _Damaged("a piece of a file that was not announced, or longer than announced")
    run.writing.write(item)
    run.digest.update(item)
    run.left -= len(item)
    if run.left == 0:
        _end_file(run, store, land)


def _next_file(run: _Attempt, store: Store, land) -> None:
    """Open the staging file of the outcome's next file (an empty one ends at once); with none
    left, commit the job's files and land its outcome."""
    if not run.files:
        outcome = run.outcome
        store.commit(run.staged)  # RenderError where the store refuses: the sweep stops
        run.staged, run.outcome = [], None
        land(run, [outcome])
        return
    rel, described_file = run.files[0]
    staged = store.stage(rel)
    run.staged.append(staged)
    run.writing = staged.open()
    run.digest = hashlib.sha256()
    run.left = described_file["bytes"]
    if run.left == 0:
        _end_file(run, store, land)


def _end_file(run: _Attempt, store: Store, land) -> None:
    rel, described_file = run.files.pop(0)
    run.writing.close()
    run.writing = None
    if run.digest.hexdigest() != described_file["sha256"]:
        raise _Damaged(f"{rel}: its bytes arrived with another sha256 than the task sent")
    _next_file(run, store, land)


def _cancel(ray, running: dict) -> None:
    """Cancel tasks whose results are no longer wanted (best effort)."""
    for stream in list(running):
        try:
            ray.cancel(stream, force=True)
        except Exception:  # already finished, or not cancellable: its results are dropped
            pass


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else ""
