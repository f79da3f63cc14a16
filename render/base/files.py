"""Files written whole or not at all: partial files renamed on completion, committed together,
stale partial files of killed runs removed; JSON and CSV.

Every file the project writes goes to a hidden temporary name beside its target, .NAME.PID.part,
created exclusively (never through a link or file already at that name), and is renamed only
when complete, so a killed or failed run never leaves a truncated file under a final name. A
render's files are renamed together (commit_together): all of them replace the earlier files of
their names, or none does.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from .errors import name_file

# created exclusively, never through a link planted at the name (O_NOFOLLOW where the OS has it)
EXCLUSIVE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def temporary_of(path: Path, pid: int, kind: str = "") -> Path:
    """Where process `pid` writes `path` until it is complete: .NAME.PID.part beside it (kind
    "earlier": .NAME.PID.earlier.part, where commit_together keeps the earlier file meanwhile)."""
    return Path(path).with_name(f".{Path(path).name}.{pid}.{kind + '.' if kind else ''}part")


def create_exclusive(path: Path) -> int:
    """A new file at `path`, opened for writing (a descriptor); refuses anything already there."""
    try:
        return os.open(path, EXCLUSIVE, 0o666)
    except FileExistsError:
        raise FileExistsError(
            f"{path}: something is already at this temporary name (a file or link this run did "
            "not make); nothing was written through it; remove it and run again"
        ) from None


class NamedWrites(io.FileIO):
    """A descriptor opened for writing whose OSErrors (write, flush, close) name `target`, the
    file the user knows, where they name none (errors.name_file)."""

    def __init__(self, descriptor: int, target: Path):
        super().__init__(descriptor, "w", closefd=True)
        self.target = target

    def write(self, data):
        try:
            return super().write(data)
        except OSError as error:
            raise name_file(error, self.target) from None

    def close(self) -> None:
        try:
            super().close()
        except OSError as error:
            raise name_file(error, self.target) from None


class PartialFile:
    """A file written under a temporary name and moved to `path` on commit. pid: the process
    that writes it (default this one; an encoder child's, for the parent that commits it)."""

    def __init__(self, path: Path, pid: int | None = None):
        self.path = Path(path)
        self.temporary = temporary_of(self.path, os.getpid() if pid is None else pid)
        self.refused = False  # something else was at the temporary name: not ours to remove

    def create(self) -> int:
        """The temporary file, created exclusively (create_exclusive): a descriptor."""
        try:
            return create_exclusive(self.temporary)
        except FileExistsError:
            self.refused = True
            raise

    def open(self, mode: str = "wb", **options):
        """The temporary file, created exclusively, as a file object ("wb", or "w" text with
        `options` such as encoding and newline) whose failed writes name `path` (a full disk's
        error names no file)."""
        if mode not in ("wb", "w"):
            raise ValueError(f"PartialFile.open: mode 'wb' or 'w', not {mode!r}")
        buffered = io.BufferedWriter(NamedWrites(self.create(), self.path))
        return buffered if mode == "wb" else io.TextIOWrapper(buffered, **options)

    def replace(self) -> None:
        """Move the complete temporary file over `path`."""
        os.replace(self.temporary, self.path)

    def commit(self) -> None:
        self.replace()

    def abort(self) -> None:
        if not self.refused:
            self.temporary.unlink(missing_ok=True)


def commit_together(partials: Sequence[PartialFile]) -> list[Path]:
    """Move every complete temporary file over its target: all of them, or none. Each earlier
    file is first kept under .NAME.PID.earlier.part (a hard link, else a copy); if a move
    fails, the targets moved so far get their earlier files back (or are removed where there
    were none), every temporary file is removed and the error is raised. Returns the targets
    that replaced an earlier file."""
    done: list[list] = []  # [partial, its earlier file's second name or None, moved yet]
    try:
        for partial in partials:
            earlier = _keep_earlier(partial.path)
            done.append([partial, earlier, False])
            partial.replace()
            done[-1][2] = True
    except BaseException:
        for partial, earlier, moved in reversed(done):
            if earlier is not None:
                if moved:
                    os.replace(earlier, partial.path)
                else:
                    earlier.unlink(missing_ok=True)
            elif moved:
                partial.path.unlink(missing_ok=True)
        for partial in partials:
            partial.abort()
        raise
    for _, earlier, _ in done:
        if earlier is not None:
            earlier.unlink(missing_ok=True)
    return [partial.path for partial, earlier, _ in done if earlier is not None]


def _keep_earlier(path: Path) -> Path | None:
    """A second name for the earlier file at `path` (None if there is none or it is a folder)."""
    if not os.path.lexists(path) or (path.is_dir() and not path.is_symlink()):
        return None
    earlier = temporary_of(path, os.getpid(), "earlier")
    try:
        os.link(path, earlier, follow_symlinks=False)
    except OSError:  # no hard links on this file system: a copy
        with os.fdopen(create_exclusive(earlier), "wb") as copy, open(path, "rb") as source:
            shutil.copyfileobj(source, copy)
    return earlier


def remove_stale_parts(folder: Path, name_pattern: str) -> list[Path]:
    """Remove the temporary files (.NAME.PID[.kind].part) of names matching the glob pattern
    `name_pattern` in `folder` that a process no longer running left (or this one: it is about
    to write them anew). Returns what was removed."""
    removed = []
    for part in Path(folder).glob(f".{name_pattern}.*.part"):
        pid = _writer_pid(part)
        if pid is not None and (pid == os.getpid() or not process_running(pid)):
            part.unlink(missing_ok=True)
            removed.append(part)
    return removed


def remove_stale_parts_of(path: Path) -> list[Path]:
    """remove_stale_parts for the one file `path`."""
    return remove_stale_parts(Path(path).parent, glob.escape(Path(path).name))


def _writer_pid(part: Path) -> int | None:
    """The PID in .NAME.PID.part or .NAME.PID.earlier.part (None if it has none)."""
    fields = part.name.removesuffix(".part").split(".")
    for field in reversed(fields[-2:]):
        if field.isdigit():
            return int(field)
    return None


def process_running(pid: int) -> bool:
    """Whether process `pid` is alive (another user's counts as alive; an id of 0 or below is
    not a process's, so what it names is left alone)."""
    if pid <= 0:
        return True  # not a process's id: leave the file alone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@contextmanager
def written_whole(path: Path) -> Iterator[Path]:
    """The temporary path to write `path` under, created exclusively first (never a planted
    link), renamed to `path` when the block ends. On any failure the temporary file is removed
    and nothing is left; an OSError that names no file (a full disk) is given `path` as its
    file, so the message says which file failed."""
    partial = PartialFile(path)
    try:
        os.close(partial.create())
        yield partial.temporary
        partial.commit()
    except BaseException as error:
        partial.abort()
        if isinstance(error, OSError):
            name_file(error, path)
        raise


MAX_JSON_DEPTH = 64  # the deepest nesting of arrays and objects a JSON text from a file may have
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_NESTING = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in a JSON text (brackets inside strings do not
    count); found without parsing, so a crafted text costs time linear in its length."""
    depth = deepest = 0
    for bracket in _JSON_NESTING.findall(_JSON_STRING.sub('""', text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def parse_json(text: str, max_depth: int = MAX_JSON_DEPTH):
    """The value of a JSON text read from a file (untrusted): ValueError naming the problem where
    it is not JSON or nests arrays and objects deeper than `max_depth` (Python's parser would
    raise RecursionError, a traceback, on a few thousand levels)."""
    depth = json_depth(text)
    if depth > max_depth:
        raise ValueError(f"its JSON nests {depth} levels deep; at most {max_depth} are read")
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"its JSON nests more than {max_depth} levels deep") from None


def write_json(path: Path, document: dict) -> None:
    """A JSON file, written under a temporary name and renamed."""
    stage_json(path, document).commit()


def stage(path: Path, write: Callable[[IO], None], mode: str = "wb", **options) -> PartialFile:
    """A file written whole under its temporary name by write(file) (opened with `mode` and
    `options`), for the caller to commit; on failure nothing is left, and an OSError names
    `path`."""
    partial = PartialFile(path)
    try:
        with partial.open(mode, **options) as file:
            write(file)
    except BaseException as error:
        partial.abort()
        if isinstance(error, OSError):
            name_file(error, path)
        raise
    return partial


def stage_json(path: Path, document: dict) -> PartialFile:
    """A JSON file written whole under its temporary name, for the caller to commit; an
    OSError names `path`."""
    return stage(path, lambda file: file.write(json.dumps(document, indent=2) + "\n"), "w", encoding="utf-8")


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence]) -> None:
    """A CSV file with one header row, written under a temporary name and renamed."""
    stage_csv(path, header, rows).commit()


def stage_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence]) -> PartialFile:
    """A CSV file with one header row written whole under its temporary name, for the caller to
    commit (with a render's other files); an OSError names `path`."""

    def write(file) -> None:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)

    return stage(path, write, "w", newline="", encoding="utf-8")
