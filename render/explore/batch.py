"""Candidates and their batches: which candidates a round holds, and a batch of them rendered as
ONE batched simulation (runner.render_batch, B > 1) with every frame's metrics recorded.

Round 0 holds the explored preset itself (candidate 0) and population - 1 mutations of it; a later
round holds population children of the PARENTS most novel valid candidates of the rounds before
(child i of parent i mod P, mutated at half the range: mutate.CHILD_SCALE). Each candidate renders
its PNG into FOLDER/candidates/<name>/ exactly as `physarum render` renders its preset.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..out.metrics import FrameMetrics
from ..preset import Preset, PresetError
from ..run import runner
from .describe import graph_descriptor
from .mutate import changed, mutate
from .plan import ExploreOptions, candidate_preset

CANDIDATES_DIR = "candidates"
ATTEMPTS = 8  # draws of a mutation the preset's checks refuse, before the parent's values stand
ATTEMPT_STRIDE = 1 << 20  # a redrawn mutation's index offset (more than any population)
GRAPH_THREADS = max(1, min(8, os.cpu_count() or 1))  # graph descriptors computed side by side


@dataclass(frozen=True)
class Candidate:
    """One candidate: its id ('r1-007'), round, index in the round, parent's id and model values."""

    id: str
    round: int
    index: int
    parent: str | None
    values: dict


def parents_count(population: int) -> int:
    """How many of the most novel candidates a later round's children come from."""
    return max(1, min(8, math.ceil(population / 4)))


def round_candidates(
    round_: int,
    origin: dict[str, float],
    options: ExploreOptions,
    most_novel: list[dict],
    accepts: Callable[[dict], bool] = lambda values: True,
) -> list[Candidate]:
    """The candidates of one round (the module's rules); most_novel: the records of the earlier
    rounds' valid candidates, most novel first (ignored in round 0). A mutation that `accepts`
    refuses (a preset the checks refuse) is drawn again, up to ATTEMPTS times (attempt a draws
    as candidate index + a * ATTEMPT_STRIDE), then the parent's values are taken unchanged."""
    if round_ == 0:
        parents = [{"id": None, "values": origin}]
    else:
        parents = most_novel[: parents_count(options.population)] or [{"id": "r0-000", "values": origin}]
    found = []
    for i in range(options.population):
        parent = parents[i % len(parents)]
        values = (
            dict(origin)
            if round_ == 0 and i == 0
            else _accepted(parent["values"], origin, options, round_, i, accepts)
        )
        found.append(Candidate(f"r{round_}-{i:03d}", round_, i, parent["id"], values))
    return found


def _accepted(parent: dict, origin: dict, options: ExploreOptions, round_: int, index: int, accepts) -> dict:
    for attempt in range(ATTEMPTS):
        values = mutate(
            parent, origin, options.seed, round_, index + attempt * ATTEMPT_STRIDE, child=round_ > 0
        )
        if accepts(values):
            return values
    return dict(parent)


def accepts(explored: Preset) -> Callable[[dict], bool]:
    """Whether model values make a preset the checks accept (explored preset, those values)."""

    def check(values: dict) -> bool:
        try:
            candidate_preset(explored, values, explored.name, "")
        except PresetError:
            return False
        return True

    return check


def candidate_name(explored: Preset, candidate: Candidate) -> str:
    return f"{explored.name}-{candidate.id}"


def candidate_of(explored: Preset, candidate: Candidate, origin: dict, seed: int) -> Preset:
    """A candidate's preset, its description saying where it came from."""
    parent = f", a child of {candidate.parent}" if candidate.parent else ""
    what = ", ".join(f"{k} {v:g}" for k, v in changed(candidate.values, origin).items()) or "unchanged"
    text = f"explore of {explored.name} (seed {seed}), candidate {candidate.id}{parent}: {what}"
    return candidate_preset(explored, candidate.values, candidate_name(explored, candidate), text)


def render_candidates(
    candidates: list[Candidate],
    explored: Preset,
    origin: dict,
    folder: Path,
    options: ExploreOptions,
    device: torch.device,
    backend: str,
) -> list[dict]:
    """Render a batch of candidates as one simulation; one record each (state.py): its values,
    PNG path relative to `folder` (None where its encoder failed, with the error) and metrics
    rows [F][M]."""
    presets = [candidate_of(explored, c, origin, options.seed) for c in candidates]
    recorder = FrameMetrics(explored.species_count)
    run_options = runner.RenderOptions(
        backend=backend,
        device=str(device),
        out_dir=Path(folder) / CANDIDATES_DIR,
        quiet=True,
        on_frame=recorder,
    )
    results = runner.render_batch(presets, run_options)
    table = recorder.table().numpy()  # [F, B, M]
    graphs = _graphs(recorder)
    records = []
    for b, (candidate, preset, result) in enumerate(zip(candidates, presets, results)):
        png = result.outputs.get("png")
        records.append(
            {
                "id": candidate.id,
                "round": candidate.round,
                "index": candidate.index,
                "parent": candidate.parent,
                "values": candidate.values,
                "name": preset.name,
                "png": None if png is None else png.relative_to(folder).as_posix(),
                "error": result.error,
                "metrics": np.asarray(table[:, b]).tolist(),
                "graph": graphs[b],
            }
        )
    return records


def _graphs(recorder: FrameMetrics) -> list[dict]:
    """Each simulation's graph descriptor of its last frame (describe.graph_descriptor), in
    threads: the thinning and labelling release the interpreter lock."""
    if recorder.previous is None:
        return []
    maps = recorder.previous.to(torch.float32).cpu().numpy()
    with ThreadPoolExecutor(max_workers=min(GRAPH_THREADS, len(maps))) as pool:
        return list(pool.map(graph_descriptor, maps))
