"""Files written whole or not at all: partial files renamed on completion, JSON and CSV.

Every file the project writes goes to a hidden temporary name beside its target and is renamed
only when complete, so a killed or failed run never leaves a truncated file under a final name.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from physarum.render.errors import name_file


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


@contextmanager
def written_whole(path: Path) -> Iterator[Path]:
    """The temporary path to write `path` under, renamed to `path` when the block ends. On any
    failure the temporary file is removed and nothing is left; an OSError that names no file (a
    full disk) is given `path` as its file, so the message says which file failed."""
    partial = PartialFile(path)
    try:
        yield partial.temporary
        partial.commit()
    except BaseException as error:
        partial.abort()
        if isinstance(error, OSError):
            name_file(error, path)
        raise


def write_json(path: Path, document: dict) -> None:
    """A JSON file, written under a temporary name and renamed."""
    with written_whole(path) as temporary:
        temporary.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence]) -> None:
    """A CSV file with one header row, written under a temporary name and renamed."""
    with written_whole(path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)
