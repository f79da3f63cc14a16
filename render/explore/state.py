"""An explore's resumable state: state.json in its folder, written whole after every batch.

It records the arguments that decide the candidates (ExploreOptions.arguments and the explored
preset's text, by sha256) and every candidate rendered so far: id, round, parent, model values,
name, its PNG (relative to the folder) and its metrics rows. A rerun with the same arguments
reads it and renders only the candidates it lacks; a rerun with other arguments is refused
(another --out, or the folder removed, starts afresh). The file is read as untrusted input: a
damaged one is one message naming it.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path, PurePosixPath

from ..base.errors import RenderError, printable
from ..base.files import parse_json, write_json
from ..base.inputs import excerpt, read_text
from ..out.metrics import METRIC_COLUMNS

STATE_VERSION = 1
MAX_STATE_BYTES = 256 * 2**20


class ExploreState:
    """The candidates rendered so far (by id), and where they are kept."""

    def __init__(self, path: Path, arguments: dict, preset_text: str):
        self.path = Path(path)
        self.arguments = {**arguments, "preset_sha256": hashlib.sha256(preset_text.encode()).hexdigest()}
        self.candidates: dict[str, dict] = {}

    @classmethod
    def open(cls, path: Path, arguments: dict, preset_text: str) -> ExploreState:
        """The state at `path` (empty where there is none yet); RenderError where it holds another
        explore's arguments or cannot be read."""
        state = cls(path, arguments, preset_text)
        if not state.path.exists():
            return state
        document = _read(state.path)
        if document.get("arguments") != state.arguments:
            raise RenderError(
                f"{state.path}: holds an explore of other arguments ({_difference(document, state)}); "
                "rerun with the same ones to resume it, or choose another --out"
            )
        candidates = document.get("candidates")
        if not isinstance(candidates, dict) or not all(isinstance(v, dict) for v in candidates.values()):
            raise RenderError(f"{state.path}: its candidates are not a mapping of records; remove it")
        for key, record in candidates.items():
            problem = record_problem(key, record)
            if problem:
                raise RenderError(
                    printable(
                        f"{state.path}: candidate {excerpt(key)} is damaged ({problem}); "
                        "remove the file to start afresh"
                    )
                )
        state.candidates = candidates
        return state

    def add(self, records: list[dict]) -> None:
        """Record a batch's candidates and write the state whole (a kill leaves the last one)."""
        for record in records:
            self.candidates[record["id"]] = record
        write_json(
            self.path, {"version": STATE_VERSION, "arguments": self.arguments, "candidates": self.candidates}
        )


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def record_problem(key: str, record: dict) -> str | None:
    """Why a candidate's record read from a state file is not one batch.py writes, or None: its
    id, round and index, parent, values (finite numbers by key), name, PNG (a path relative to
    the folder, inside it), error, metrics rows (numbers, METRIC_COLUMNS each) and graph."""
    if record.get("id") != key:
        return "its id is not its key"
    if not (_whole(record.get("round")) and _whole(record.get("index"))):
        return "its round and index are not whole numbers"
    if not (record.get("parent") is None or isinstance(record.get("parent"), str)):
        return "its parent is not an id"
    values = record.get("values")
    if not isinstance(values, dict) or not all(
        isinstance(k, str) and _number(v) and math.isfinite(v) for k, v in values.items()
    ):
        return "its values are not finite numbers by key"
    if not isinstance(record.get("name"), str):
        return "its name is not text"
    png = record.get("png")
    if png is not None and not (
        isinstance(png, str)
        and png
        and "\0" not in png
        and not PurePosixPath(png).is_absolute()
        and ".." not in PurePosixPath(png).parts
    ):
        return "its PNG is not a path inside the explore's folder"
    if not (record.get("error") is None or isinstance(record.get("error"), str)):
        return "its error is not text"
    metrics = record.get("metrics")
    if not isinstance(metrics, list) or not all(
        isinstance(row, list) and len(row) == len(METRIC_COLUMNS) and all(map(_number, row))
        for row in metrics
    ):
        return f"its metrics are not rows of {len(METRIC_COLUMNS)} numbers"
    graph = record.get("graph")
    if not (
        graph is None or (isinstance(graph, dict) and all(v is None or _number(v) for v in graph.values()))
    ):
        return "its graph is not numbers by name"
    return None


def _read(path: Path) -> dict:
    try:
        document = parse_json(read_text(path, MAX_STATE_BYTES))
    except (OSError, ValueError) as error:
        raise RenderError(f"{path}: not an explore state ({error}); remove it to start afresh") from None
    if not isinstance(document, dict) or document.get("version") != STATE_VERSION:
        raise RenderError(f"{path}: not an explore state of version {STATE_VERSION}; remove it")
    return document


def _difference(document: dict, state: ExploreState) -> str:
    before = document.get("arguments")
    if not isinstance(before, dict):
        return "no arguments recorded"
    keys = [k for k in state.arguments if before.get(k) != state.arguments[k]]
    return ", ".join(
        "the explored preset's text"
        if k == "preset_sha256"
        else f"{k} {before.get(k)!r} then, {state.arguments[k]!r} now"
        for k in keys
    )
