"""The novelty archive: every rendered candidate's status and descriptor (describe.py), the valid
ones' novelty against each other (novelty.py), the most novel, and the farthest-point choice of
what is kept. Records are state.py's, in candidate order (round, index)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..out.metrics import METRIC_COLUMNS
from .describe import DESCRIPTOR_COLUMNS, describe, status
from .novelty import farthest_points, novelty, robust_scale


@dataclass
class Entry:
    """One candidate in the archive: its record, status, descriptor and novelty (None unless valid)."""

    record: dict
    status: str
    descriptor: dict[str, float]
    novelty: float | None = None


def ordered(records: dict[str, dict]) -> list[dict]:
    """The records in candidate order: round, then index."""
    return sorted(records.values(), key=lambda r: (int(r["round"]), int(r["index"])))


def _rows(record: dict) -> np.ndarray:
    rows = np.asarray(record.get("metrics") or [], dtype=np.float64)
    return rows.reshape(-1, len(METRIC_COLUMNS)) if rows.size else np.zeros((0, len(METRIC_COLUMNS)))


def build_archive(records: list[dict]) -> tuple[list[Entry], np.ndarray, list[int]]:
    """(every record's Entry, the valid entries' scaled descriptors [v, d'], their indices)."""
    entries = []
    for record in records:
        rows = _rows(record)
        state = "failed" if record.get("error") or not record.get("png") else status(rows)
        entries.append(Entry(record, state, describe(rows, record.get("graph"))))
    valid = [i for i, e in enumerate(entries) if e.status == "valid"]
    matrix = np.array([[entries[i].descriptor[c] for c in DESCRIPTOR_COLUMNS] for i in valid])
    scaled = robust_scale(matrix.reshape(len(valid), len(DESCRIPTOR_COLUMNS)))
    for i, score in zip(valid, novelty(scaled)):
        entries[i].novelty = float(score)
    return entries, scaled, valid


def most_novel(records: list[dict]) -> list[dict]:
    """The valid records, most novel first (ties: earlier first)."""
    entries, _, valid = build_archive(records)
    chosen = sorted(valid, key=lambda i: (-entries[i].novelty, i))
    return [entries[i].record for i in chosen]


def kept(entries: list[Entry], scaled: np.ndarray, valid: list[int], keep: int) -> list[int]:
    """Indices into entries of the `keep` candidates kept, in the order they were chosen."""
    scores = np.array([entries[i].novelty for i in valid], dtype=np.float64)
    return [valid[j] for j in farthest_points(scaled, scores, keep)]
