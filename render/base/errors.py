"""The errors a user sees, and the hint that goes with a misspelt name.

A RenderError is a problem of the user's input or machine, not a bug: the CLI prints its message
and exits 2. Every message names the problem and what is allowed. What is printed passes through
printable(): a path or value from the user never reaches the terminal as a control sequence.
"""

from __future__ import annotations

import difflib
import errno
import re
import sys
from collections.abc import Iterable
from pathlib import Path


class RenderError(Exception):
    """A problem that stops a render before or while it runs (not a bug): a clear message."""


MAX_PROBLEMS = 20  # the most problems one message lists; the rest are counted


class PresetError(Exception):
    """One or more problems with a preset; str() is the user-facing report (shown(problems)),
    .problems all of them."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(shown(problems)))


def shown(problems: list[str], limit: int = MAX_PROBLEMS) -> list[str]:
    """The problems a message lists: all of them up to `limit`, else the first `limit` and a
    line counting the rest (a file of a million mistakes costs a screenful, not a million lines)."""
    if len(problems) <= limit:
        return list(problems)
    return [*problems[:limit], f"... and {len(problems) - limit} more problems"]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """'did you mean 'X'? ' for the closest of `choices` to `word`, or '' where none is close."""
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def ordinal(n: int) -> str:
    """2nd, 3rd, 4th, 11th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def printable(text) -> str:
    """`text` with every character that is not printable (control characters, newlines included,
    terminal escapes, bidirectional overrides, line separators) written as Python writes it in a
    repr: '\\x1b', '\\n', '\\u202e'. The one function every user-facing line goes through."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


# What failed, by errno; the default is "failed".
_ACTIONS = {
    errno.ENOSPC: "cannot write",
    errno.EDQUOT: "cannot write",
    errno.EFBIG: "cannot write",
    errno.EROFS: "cannot write",
    errno.EACCES: "cannot write",
    errno.EPERM: "cannot write",
    errno.EEXIST: "cannot make a folder here (a file is in the way)",
    errno.ENOTDIR: "cannot make a folder here (a file is in the way)",
    errno.EISDIR: "cannot write a file here (a folder is in the way)",
    errno.ENOENT: "cannot open",
}
_PARTIAL = re.compile(r"^\.(.+)\.\d+\.part$")  # files.PartialFile's temporary name


def os_error_message(error: OSError) -> str:
    """'PATH: what failed: why' for an OSError, e.g. 'outputs/x/x-s1.json: cannot write: No space
    left on device'. The path is the one the user knows: a partial file's target, not its
    temporary name; an error without a file says so."""
    name = error.filename2 if error.filename2 is not None else error.filename
    reason = error.strerror or str(error)
    action = _ACTIONS.get(error.errno, "failed")
    if name is None:
        return printable(f"{action}: {reason} (the file was not named)")
    path = Path(str(name))
    match = _PARTIAL.match(path.name)
    if match:
        path = path.with_name(match.group(1))
    return printable(f"{path}: {action}: {reason}")


def name_file(error: OSError, path) -> OSError:
    """`error` with `path` as its file where it names none (a write's errors name no file);
    an error of a message only (no errno) is left as it is."""
    if error.filename is None and error.errno is not None:
        error.filename = str(path)
    return error


def out_of_memory(error: BaseException) -> bool:
    """An allocation that failed (on the host or the GPU), however torch reports it. Torch is
    not imported here: the encoder processes import this module and no torch (a torch error
    exists only where torch was imported)."""
    torch = sys.modules.get("torch")
    torch_oom = (torch.OutOfMemoryError,) if torch is not None else ()
    return isinstance(error, (MemoryError, *torch_oom)) or (
        isinstance(error, RuntimeError) and "out of memory" in str(error).lower()
    )


def machine_problem(error: BaseException) -> str | None:
    """The one message for an error of the machine rather than of the code: a file operation that
    failed (os_error_message) or memory that ran out after the memory check passed; None for any
    other error (a bug, which keeps its traceback)."""
    if isinstance(error, OSError):
        return os_error_message(error)
    if out_of_memory(error):
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        return printable(
            f"out of memory while running (after the memory check passed): {first}; "
            "lower canvas or agents.count (a sweep: --batch), or free memory on the device"
        )
    return None
