"""Files written whole or not at all: partial files renamed on completion, JSON and CSV.

Every file the project writes goes to a hidden temporary name beside its target and is renamed
only when complete, so a killed or failed run never leaves a truncated file under a final name.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path


class PartialFile:
    """A file written under a temporary name and moved to `path` on commit."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.temporary = self.temporary_of(self.path, os.getpid())

    @staticmethod
    def temporary_of(path: Path, pid: int) -> Path:
        """Where process `pid` writes `path` until it is complete: .NAME.PID.part beside it."""
        return Path(path).with_name(f".{Path(path).name}.{pid}.part")

    def commit(self) -> None:
        os.replace(self.temporary, self.path)

    def abort(self) -> None:
        self.temporary.unlink(missing_ok=True)


def write_json(path: Path, document: dict) -> None:
    """A JSON file, written under a temporary name and renamed."""
    partial = PartialFile(path)
    partial.temporary.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    partial.commit()


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence]) -> None:
    """A CSV file with one header row, written under a temporary name and renamed."""
    partial = PartialFile(path)
    with open(partial.temporary, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)
    partial.commit()
