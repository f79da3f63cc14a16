"""The errors a user sees, and the hint that goes with a misspelt name.

A RenderError is a problem of the user's input or machine, not a bug: the CLI prints its message
and exits 2. Every message names the problem and what is allowed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class RenderError(Exception):
    """A problem that stops a render before or while it runs (not a bug): a clear message."""


class PresetError(Exception):
    """One or more problems with a preset; str() is the full, user-facing report."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """'did you mean 'X'? ' for the closest of `choices` to `word`, or '' where none is close."""
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f"did you mean {close[0]!r}? " if close else ""
