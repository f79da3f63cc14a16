"""What an explore writes once its rounds are done, in its folder:

- candidates.csv: every candidate (id, round, parent, name, status, novelty, the kept rank, each
  mutable model value, the descriptor, its PNG);
- kept/<name>.yaml: the preset of each kept candidate, which `physarum render` renders to the
  same PNG (candidates/<name>/<name>-s<seed>.png) byte for byte; its image and sound paths
  relative to kept/ (Preset.saved_yaml), so it renders from any working directory and moves
  with its project (the folder holding the explore's folder and the images);
- index.html and contact.png: the kept candidates, in the order chosen, through the sweep's
  gallery and contact sheet (render/sweep/gallery.py, contact.py), labelled with their novelty
  and the values they changed.

Each file is written whole (files.write_csv, written_whole); kept presets of an earlier choice
(another --keep) are removed.
"""

from __future__ import annotations

from pathlib import Path

from ..base.files import write_csv, written_whole
from ..preset import Preset
from ..sweep.gallery import write_gallery
from .archive import Entry
from .batch import Candidate, candidate_of
from .describe import DESCRIPTOR_COLUMNS
from .mutate import KEYS, changed

KEPT_DIR = "kept"


def _candidate(record: dict) -> Candidate:
    return Candidate(
        record["id"], int(record["round"]), int(record["index"]), record["parent"], record["values"]
    )


def write_csv_table(folder: Path, entries: list[Entry], ranks: dict[int, int]) -> Path:
    """candidates.csv: a row per candidate (the module's columns)."""
    path = Path(folder) / "candidates.csv"
    header = ("id", "round", "parent", "name", "status", "novelty", "kept", *KEYS, *DESCRIPTOR_COLUMNS, "png")
    rows = []
    for i, entry in enumerate(entries):
        record, values = entry.record, entry.record["values"]
        rows.append(
            (
                record["id"],
                record["round"],
                record["parent"] or "",
                record["name"],
                entry.status,
                "" if entry.novelty is None else f"{entry.novelty:.6g}",
                ranks.get(i, ""),
                *(f"{values[k]:g}" if k in values else "" for k in KEYS),
                *(f"{entry.descriptor[c]:.6g}" for c in DESCRIPTOR_COLUMNS),
                record.get("png") or "",
            )
        )
    write_csv(path, header, rows)
    return path


def write_kept(folder: Path, explored: Preset, origin: dict, seed: int, chosen: list[Entry]) -> list[Path]:
    """kept/<name>.yaml for each chosen candidate (its preset's full dump, its image and sound
    paths relative to kept/: Preset.saved_yaml); stale ones removed."""
    kept_dir = Path(folder) / KEPT_DIR
    kept_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for entry in chosen:
        preset = candidate_of(explored, _candidate(entry.record), origin, seed)
        path = kept_dir / f"{preset.name}.yaml"
        header = (
            f"# {preset.description}\n# novelty {entry.novelty:.4g}: physarum render {KEPT_DIR}/{path.name}\n"
        )
        with written_whole(path) as temporary:
            temporary.write_text(header + preset.saved_yaml(kept_dir), encoding="utf-8")
        paths.append(path)
    for stale in kept_dir.glob(f"{explored.name}-r*-*.yaml"):
        if stale not in paths:
            stale.unlink()
    return paths


def gallery_records(explored: Preset, origin: dict, seed: int, chosen: list[Entry]) -> list[dict]:
    """The sweep gallery's records of the chosen candidates: params = novelty and changed values."""
    records = []
    for number, entry in enumerate(chosen):
        record = entry.record
        preset = candidate_of(explored, _candidate(record), origin, seed)
        params = {"novelty": round(entry.novelty, 3), **changed(record["values"], origin)}
        records.append(
            {
                "id": record["id"],
                "name": record["name"],
                "index": number,
                "status": "done",
                "params": params,
                "preset": preset.model_dump(mode="json"),
                "outputs": {"png": record["png"]},
            }
        )
    return records


def write_outputs(
    folder: Path, explored: Preset, origin: dict, seed: int, entries: list[Entry], chosen: list[int]
) -> dict[str, Path]:
    """Every file of the module's list; their paths by kind."""
    ranks = {index: rank for rank, index in enumerate(chosen, start=1)}
    picked = [entries[i] for i in chosen]
    table = write_csv_table(folder, entries, ranks)
    write_kept(folder, explored, origin, seed, picked)
    page = write_gallery(Path(folder), gallery_records(explored, origin, seed, picked))
    return {
        "csv": table,
        "gallery": page,
        "contact": Path(folder) / "contact.png",
        "kept": Path(folder) / KEPT_DIR,
    }
