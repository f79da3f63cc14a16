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
from pathlib import Path

from physarum.render.base.errors import RenderError
from physarum.render.base.files import parse_json, write_json
from physarum.render.base.inputs import read_text

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
        state.candidates = candidates
        return state

    def add(self, records: list[dict]) -> None:
        """Record a batch's candidates and write the state whole (a kill leaves the last one)."""
        for record in records:
            self.candidates[record["id"]] = record
        write_json(
            self.path, {"version": STATE_VERSION, "arguments": self.arguments, "candidates": self.candidates}
        )


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
