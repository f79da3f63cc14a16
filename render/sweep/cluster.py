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
- The driver places every task itself (scheduling.NodeAffinitySchedulingStrategy, hard): a node
  with GPUs runs one task per GPU, each given one (`num_gpus`), a node without runs CPU tasks
  (one per CPU), and `per_node` caps the tasks at once on any node. A task takes its device
  from its own worker (its GPU where Ray gave it one and torch sees CUDA there, else the CPU)
  and sizes its batches from that device's memory (chunk.run_chunk), never from the driver's.
  Which node renders a job changes nothing in its files (docs/model.md).
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
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import RenderError
from ..base.files import process_running
from ..base.storage import Staged, Store, described, open_store
from ..preset import carried
from ..preset.provenance import carried_images
from .chunk import chunk_outcomes, delivered_files, failed_outcomes
from .plan import FILES, MAX_ATTEMPTS
from .progress import NodeProgress, node_label

FILE_PIECE = 8 << 20  # bytes of a file per streamed object
BACKPRESSURE = 8  # streamed objects a task may produce ahead of the driver
NODES_READ = 10.0  # seconds between reads of the cluster's nodes while chunks wait


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


@dataclass
class NodeSlots:
    """A live node as the sweep schedules on it: its Ray id and address, whether its tasks get a
    GPU each, its CPUs, and how many tasks run there at once (`slots`; `running` now)."""

    id: str
    ip: str
    gpu: bool
    cpus: int
    slots: int
    running: int = 0

    @property
    def label(self) -> str:
        return node_label(self.ip, self.id, self.gpu)


def check_per_node(per_node: int | None) -> None:
    """per_node: None (no cap) or at least 1; RenderError otherwise."""
    if per_node is not None and (isinstance(per_node, bool) or not isinstance(per_node, int) or per_node < 1):
        raise RenderError(f"--per-node must be at least 1, got {per_node!r}")


def cluster_nodes(ray, per_node: int | None = None) -> dict[str, NodeSlots]:
    """The cluster's live nodes that can run a task, by id: a node with GPUs runs one task per
    GPU, a node without one per CPU, and none more than per_node at once."""
    nodes = {}
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        resources = node.get("Resources") or {}
        gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 0))
        slots = min(gpus or cpus, per_node or gpus or cpus)
        if slots > 0:
            nodes[node["NodeID"]] = NodeSlots(
                node["NodeID"], node.get("NodeManagerAddress", "?"), gpus > 0, cpus, slots
            )
    return nodes


def ray_workers(ray, per_node: int | None = None) -> int:
    """How many chunks a Ray cluster runs at once: its nodes' slots (cluster_nodes)."""
    return max(1, sum(node.slots for node in cluster_nodes(ray, per_node).values()))


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


def task_device() -> tuple[str, int]:
    """This task's device as its own worker sees it, and the GPUs Ray gave it: its GPU ("cuda":
    Ray sets CUDA_VISIBLE_DEVICES to it) where it was given one and torch sees CUDA here, else
    "cpu" (a node that declares a GPU torch cannot see renders on its CPU; the record says so)."""
    import ray  # start-up: in a Ray task, where Ray is imported
    import torch  # start-up: in a Ray task, where the render imports it anyway

    gpus = len(ray.get_gpu_ids())
    return ("cuda" if gpus and torch.cuda.is_available() else "cpu"), gpus


def _stream_chunk(chunk: list[dict], backend: str):
    """A Ray task (a generator): the chunk rendered into a temporary folder of this worker, on
    its own device (task_device); for each job its outcome (with `files`: size and sha256 of
    each), then its files' bytes in order, in pieces of FILE_PIECE."""
    folder = _work_folder()
    try:
        node = _node()
        device, gpus = task_device()
        for outcome in chunk_outcomes(chunk, str(folder), device, backend, True):
            outcome.update(node=node, gpus=gpus)
            rels = delivered_files(outcome) if outcome["status"] == "done" else []
            try:
                outcome["files"] = described(folder, rels)
            except OSError as error:
                outcome = {**failed_outcomes([outcome], error, device)[0], "node": node, "gpus": gpus}
                rels = []
            yield outcome
            for rel in rels:
                with open(folder / rel, "rb") as file:
                    while piece := file.read(FILE_PIECE):
                        yield piece
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _store_chunk(chunk: list[dict], destination: str, backend: str) -> list[dict]:
    """A Ray task: the chunk rendered on this worker's own device (task_device) and its files
    stored by this worker, in place in a shared folder or uploaded to object storage from a
    temporary folder; one outcome per job. A store that refuses a write fails the job with
    `refused` set (the driver stops the sweep)."""
    store = open_store(destination)
    node = _node()
    device, gpus = task_device()
    if store.local:  # a shared folder every machine mounts: written in place
        outcomes = chunk_outcomes(chunk, str(store.root), device, backend, True)
        return [{**outcome, "node": node, "gpus": gpus} for outcome in outcomes]
    folder = _work_folder()
    try:
        outcomes = chunk_outcomes(chunk, str(folder), device, backend, True)
        for outcome in outcomes:
            outcome.update(node=node, gpus=gpus)
            if outcome["status"] != "done":
                continue
            rels = delivered_files(outcome)
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
    node: NodeSlots
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
    per_node: int | None = None,
    progress: NodeProgress | None = None,
) -> None:
    """Every chunk as a Ray task placed by this driver on a node with a free slot (cluster_nodes:
    a GPU each on a GPU node, CPU work on a CPU node, at most per_node at once on any node), its
    files into `store` as `files` says; on_start(number) when a chunk's task is submitted,
    on_done(number, outcomes) as jobs land, `progress` told of each node's jobs (see the
    module's text)."""
    if files not in FILES:
        raise RenderError(f"files: one of {', '.join(FILES)}, not {files!r}")
    if max_attempts < 1:
        raise RenderError(f"max_attempts must be at least 1, got {max_attempts}")
    check_per_node(per_node)
    log = log or (lambda line: None)
    progress = progress or NodeProgress(0, shown=False)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # start-up: with Ray

    if files == "driver":
        task = ray.remote(max_retries=0)(_stream_chunk)
        extra = {"num_returns": "streaming", "_generator_backpressure_num_objects": BACKPRESSURE}
    else:
        task = ray.remote(max_retries=0, retry_exceptions=False)(_store_chunk)
        extra = {}
    nodes = cluster_nodes(ray, per_node)
    # chunks waiting for a slot: (number, attempt, payload, the node an earlier attempt died on)
    waiting: deque[tuple[int, int, list[dict], str | None]] = deque(
        (number, 1, payload, None) for number, payload in enumerate(payloads)
    )
    running: dict[object, _Attempt] = {}

    def submit(node: NodeSlots, number: int, attempt: int, payload: list[dict]) -> None:
        placed = task.options(
            num_gpus=1 if node.gpu else 0,
            num_cpus=1 if node.cpus else 0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.id, soft=False),
            **extra,
        )
        if files == "driver":
            stream = placed.remote(payload, backend)
        else:
            stream = placed.remote(payload, store.url, backend)
        node.running += 1
        running[stream] = _Attempt(number, attempt, payload, stream, node, {item["id"] for item in payload})
        progress.started(node.id, node.label, len(payload))
        if attempt == 1:
            on_start(number)

    read = time.monotonic()

    def fill() -> None:
        """Waiting chunks onto free slots, the emptiest node first, a node other than the one a
        chunk's last attempt died on where one is free (Ray may not yet know that node is dead);
        the nodes read again every NODES_READ seconds (a node that joined takes work)."""
        nonlocal nodes, read
        if waiting and time.monotonic() - read > NODES_READ:
            nodes, read = _refreshed(nodes, cluster_nodes(ray, per_node)), time.monotonic()
        while waiting:
            free = [node for node in nodes.values() if node.running < node.slots]
            if not free:
                return
            number, attempt, payload, died_on = waiting.popleft()
            others = [node for node in free if node.id != died_on] or free
            node = min(others, key=lambda n: (n.running / n.slots, n.ip, n.id))
            submit(node, number, attempt, payload)

    def ended(run: _Attempt) -> None:
        """The attempt's task is over: its slot is free (on the node as last read)."""
        if run.node.id in nodes:
            nodes[run.node.id].running -= 1
        progress.dropped(run.node.id, len(run.owed))

    def land(run: _Attempt, outcomes: list[dict]) -> None:
        for outcome in outcomes:
            run.owed.discard(outcome["id"])
            outcome.update(attempt=run.attempt, max_attempts=max_attempts)
        progress.landed(run.node.id, run.node.label, len(outcomes))
        on_done(run.number, outcomes)

    def failed(run: _Attempt, error: BaseException) -> None:
        """The attempt died: its unlanded jobs wait for a slot again, or fail after max_attempts;
        the cluster's nodes are read again (a dead node's slots go)."""
        run.discard()
        nonlocal nodes
        nodes = _refreshed(nodes, cluster_nodes(ray, per_node))
        owed = [item for item in run.payload if item["id"] in run.owed]
        if not owed:
            return
        reason = f"Ray task failed: {type(error).__name__}: {_first_line(error)}"
        if run.attempt < max_attempts:
            log(
                f"batch {run.number + 1}: {reason}; running its {len(owed)} unfinished jobs again "
                f"(attempt {run.attempt + 1} of {max_attempts})"
            )
            waiting.appendleft((run.number, run.attempt + 1, owed, run.node.id))
        else:
            device = "cuda" if run.node.gpu else "cpu"
            outcomes = failed_outcomes(owed, f"{reason} (after {max_attempts} attempts)", device)
            land(run, [{**outcome, "node": run.node.id} for outcome in outcomes])

    fill()
    while running or waiting:
        if not running:  # jobs wait, and no node can take them
            for number, attempt, payload, _ in waiting:
                reason = "no live node of the Ray cluster has a CPU or GPU to run it"
                on_done(
                    number,
                    [
                        {**o, "attempt": attempt, "max_attempts": max_attempts}
                        for o in failed_outcomes(payload, reason, "?")
                    ],
                )
            return
        ready, _ = ray.wait(list(running), num_returns=1)
        run = running[ready[0]]
        if files == "workers":
            del running[ready[0]]
            ended(run)
            try:
                outcomes = ray.get(ready[0])
            except Exception as error:  # the task died: its worker or node
                failed(run, error)
                fill()
                continue
            refused = [o for o in outcomes if o.pop("refused", False)]
            if refused:
                _cancel(ray, running)
                raise RenderError(refused[0]["error"])
            land(run, outcomes)
            fill()
            continue
        try:
            reference = next(run.stream)
        except StopIteration:
            del running[ready[0]]
            ended(run)
            if run.owed:  # the stream ended early: treat as a failed attempt
                failed(run, RuntimeError("the task's stream ended before its jobs' files"))
            fill()
            continue
        try:
            item = ray.get(reference)
        except Exception as error:  # the task died (worker, node) or raised
            del running[ready[0]]
            ended(run)
            failed(run, error)
            fill()
            continue
        finally:
            del reference
        try:
            _receive(run, item, store, land)
        except _Damaged as error:
            del running[ready[0]]
            _cancel(ray, {run.stream: run})
            ended(run)
            failed(run, error)
            fill()
        except BaseException:
            run.discard()
            _cancel(ray, running)
            raise


def _refreshed(nodes: dict[str, NodeSlots], now: dict[str, NodeSlots]) -> dict[str, NodeSlots]:
    """The cluster's nodes as read now, each keeping the tasks this driver counts on it."""
    for node_id, node in now.items():
        if node_id in nodes:
            node.running = nodes[node_id].running
    return now


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
