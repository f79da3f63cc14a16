"""`physarum explore PRESET`: the whole search, round by round, resumable.

The options are checked (plan.check_options) and the cost said before anything runs (an
estimate of CONFIRM_S or more needs --yes); then each round's candidates (batch.round_candidates)
that the state lacks are rendered in batches of as many as fit the device (sweep/plan.py's
batch_limit, at most MAX_BATCH), each batch ONE simulation of B candidates, and the state written
whole after each batch (state.py): a killed explore rerun with the same arguments goes on from
its last batch. Once every round is done the archive chooses what is kept and outputs.py writes
the files. Everything lands in OUT/<preset>-explore/.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import RenderError, printable
from ..base.interrupts import stop_if_requested
from ..base.locks import LockHeld, NameLock
from ..preset import Preset
from ..run import machine
from ..sweep.plan import batch_limit
from .archive import build_archive, kept, most_novel, ordered
from .batch import accepts, render_candidates, round_candidates
from .mutate import mutable_values
from .outputs import write_outputs
from .plan import (
    ExploreOptions,
    check_cost,
    check_options,
    cost_lines,
    explored_preset,
)
from .state import ExploreState

MAX_BATCH = 64  # candidates per simulation: each brings its own encoder process on the host
# device bytes per canvas cell of one candidate's per-frame metrics (float64 maps of this frame
# and the last, their difference, the complex128 spectrum) beside what batch_limit counts, and
# the share of the free memory they may take
METRIC_BYTES_PER_CELL = 80
METRIC_MEMORY_SHARE = 0.25
LOCK_NAME = ".explore.lock"  # one explore at a time in a folder (render/base/locks.py)


@dataclass
class ExploreResult:
    """What an explore did: its folder, files, counts by status, the kept ids, candidates
    rendered by this run (not resumed) and their seconds."""

    folder: Path
    outputs: dict[str, Path]
    statuses: dict[str, int]
    kept: list[str]
    rendered: int
    seconds: float


def _say(options: ExploreOptions, line: str) -> None:
    if not options.quiet:
        print(printable(line), file=sys.stderr)


def explore(preset: Preset, options: ExploreOptions) -> ExploreResult:
    """Explore the preset's model (the module's course); RenderError or PresetError for bad
    options, before anything is written; RenderError where another explore holds the folder."""
    check_options(options)
    options = dataclasses.replace(options, steps=options.steps or preset.run.steps)  # as the state says
    device = machine.resolve_device(options.device)
    backend = machine.resolve_backend(options.backend, device)
    if device.type == "cpu":
        machine.limit_cpu_threads()
    explored = explored_preset(preset, options)
    for line in cost_lines(explored, options, device.type, backend):
        _say(options, line)
    check_cost(explored, options, device.type, backend)
    folder = Path(options.out) / f"{preset.name}-explore"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with NameLock(folder / LOCK_NAME):
            return _explore(explored, options, folder, device, backend)
    except LockHeld as held:
        who = "another process" if held.pid is None else f"process {held.pid}"
        raise RenderError(f"{folder}: another explore ({who}) is running in this folder") from None


def _explore(explored: Preset, options: ExploreOptions, folder: Path, device, backend: str) -> ExploreResult:
    """The rounds, batch by batch (each recorded in the state), then the archive's choice and
    the files."""
    state = ExploreState.open(folder / "state.json", options.arguments(), explored.to_yaml())
    origin = mutable_values(explored.model_dump()["model"])
    limit = batch_size(explored, backend, device)
    began, rendered = time.perf_counter(), 0
    for round_ in range(options.rounds):
        novel = most_novel(ordered(state.candidates)) if round_ else []
        found = round_candidates(round_, origin, options, novel, accepts(explored))
        todo = [c for c in found if c.id not in state.candidates]
        for start in range(0, len(todo), limit):
            stop_if_requested()
            batch = todo[start : start + limit]
            state.add(render_candidates(batch, explored, origin, folder, options, device, backend))
            rendered += len(batch)
            _say(
                options,
                f"round {round_ + 1}/{options.rounds}: {len(state.candidates)}/{options.candidates} "
                f"candidates ({time.perf_counter() - began:.1f} s)",
            )
    entries, scaled, valid = build_archive(ordered(state.candidates))
    chosen = kept(entries, scaled, valid, options.keep_count)
    outputs = write_outputs(folder, explored, origin, options.seed, entries, chosen)
    statuses: dict[str, int] = {}
    for entry in entries:
        statuses[entry.status] = statuses.get(entry.status, 0) + 1
    ids = [entries[i].record["id"] for i in chosen]
    return ExploreResult(folder, outputs, statuses, ids, rendered, time.perf_counter() - began)


def batch_size(explored: Preset, backend: str, device) -> int:
    """Candidates per simulation: what fits the device (sweep/plan.py's batch_limit) and leaves
    room for the metrics' maps, at most MAX_BATCH, at least 1."""
    cells = explored.canvas.width * explored.canvas.height
    metrics = int(machine.available_bytes(device) * METRIC_MEMORY_SHARE) // (cells * METRIC_BYTES_PER_CELL)
    return max(1, min(MAX_BATCH, batch_limit(explored, backend, device), metrics))


def summary_lines(result: ExploreResult) -> list[str]:
    """What `physarum explore` prints when done."""
    counts = ", ".join(f"{count} {status}" for status, count in sorted(result.statuses.items()))
    rate = result.rendered / result.seconds * 60 if result.rendered and result.seconds > 0 else 0.0
    return [
        f"{sum(result.statuses.values())} candidates ({counts}); rendered {result.rendered} now in "
        f"{result.seconds:.1f} s ({rate:.1f} candidates/minute)",
        f"kept {len(result.kept)}: {', '.join(result.kept)}",
        *(f"{kind}: {path}" for kind, path in result.outputs.items()),
    ]
