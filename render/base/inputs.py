"""What every input file must be before it is read, and how a message quotes a bad value.

Inputs (preset and sweep files, images, the files `render --from` reads) are opened only when
they are regular files: a FIFO, a device or a folder would block or mean nothing, so it is
named and refused before anything opens it. Texts are read only up to MAX_TEXT_BYTES, checked
on the file's size before reading. A bad value is quoted in messages by `excerpt`, never whole;
a message that names the value itself (an input file by its path) is a `NamedValueError`, and
no quote follows it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_TEXT_BYTES = 1 << 20  # a preset or sweep text: at most 1 MiB
EXCERPT_CHARS = 80  # the most of a bad value's repr a message quotes

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NamedValueError(ValueError):
    """A bad value's message that names the value itself (an input file by its path): the
    preset's message adds no quote of the value after it, which would name it twice."""


def excerpt(value, limit: int = EXCERPT_CHARS) -> str:
    """repr(value), cut to `limit` characters with '...' where longer. Containers are cut
    while they are written, so a huge value costs no more than its excerpt."""
    text = _repr_cut(value, limit)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _repr_cut(value, limit: int) -> str:
    """repr of scalars; containers written item by item until `limit` characters are passed."""
    if isinstance(value, dict):
        parts, size = [], 0
        for key, item in value.items():
            if size > limit:
                break
            parts.append(f"{_repr_cut(key, limit)}: {_repr_cut(item, limit)}")
            size += len(parts[-1]) + 2
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, list):
        parts, size = [], 0
        for item in value:
            if size > limit:
                break
            parts.append(_repr_cut(item, limit))
            size += len(parts[-1]) + 2
        return "[" + ", ".join(parts) + "]"
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit])
    return repr(value)


def shorten(text: str, limit: int = 200) -> str:
    """`text` as it is, or cut to `limit` characters with '...' (a key or path quoted as given)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def file_problem(path: str | Path) -> str | None:
    """Why `path` cannot be read as an input file ('no such file', 'is a folder', 'is a FIFO
    (named pipe)', ...); None for a regular file. Nothing is opened."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"is {kind}, not a regular file"


def read_text(path: str | Path, limit: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes; ValueError naming the problem
    (without the path, which the caller's message names)."""
    problem = file_problem(path)
    if problem:
        raise ValueError(problem)
    if os.stat(path).st_size > limit:
        raise ValueError(f"is {os.stat(path).st_size} bytes; at most {limit} bytes are read")
    with open(path, "rb") as file:
        data = file.read(limit + 1)  # the file may have grown since its size was checked
    if len(data) > limit:
        raise ValueError(f"is more than {limit} bytes; at most {limit} bytes are read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"is not UTF-8 text ({error.reason} at byte {error.start})") from None
