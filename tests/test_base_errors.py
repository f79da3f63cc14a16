"""The errors a user sees: printable text, messages of failed file operations and of memory."""

from __future__ import annotations

import errno

import torch

from physarum.render.base.errors import (
    MAX_PROBLEMS,
    PresetError,
    machine_problem,
    os_error_message,
    printable,
    shown,
)
from physarum.render.cli.main import main


def test_printable_escapes_every_control_character():
    assert printable("plain é ∞ text") == "plain é ∞ text"
    assert printable("a\x1b[2Jb\nc\td\x7f\u202ee\x00") == "a\\x1b[2Jb\\nc\\td\\x7f\\u202ee\\x00"


def test_os_errors_name_the_file_and_what_failed():
    full = OSError(errno.ENOSPC, "No space left on device")
    full.filename = "outputs/x/.x-s1.json.4242.part"  # a partial file: its target is named
    assert os_error_message(full) == "outputs/x/x-s1.json: cannot write: No space left on device"
    in_the_way = FileExistsError(errno.EEXIST, "File exists", "out\x1b[31m")
    assert os_error_message(in_the_way).startswith("out\\x1b[31m: cannot make a folder here")
    assert "was not named" in os_error_message(OSError(errno.EIO, "Input/output error"))


def test_memory_that_runs_out_is_a_machine_problem_and_other_errors_are_not():
    for error in (MemoryError(), torch.OutOfMemoryError("CUDA out of memory"), RuntimeError("out of memory")):
        assert machine_problem(error).startswith("out of memory while running")
    assert machine_problem(RuntimeError("shape mismatch")) is None
    assert machine_problem(ValueError("x")) is None


def test_a_message_lists_at_most_max_problems_and_counts_the_rest(write_yaml, capsys):
    """A preset of 45 mistakes prints 20 of them and '... and 25 more problems', where every one
    was printed; the error keeps all of them."""
    text = "name: many\nmodel:\n" + "".join(f"  unknown_{i}: 1\n" for i in range(45))
    assert main(["validate", str(write_yaml(text))]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == MAX_PROBLEMS + 1 and all(line.startswith("error: ") for line in lines)
    assert "unknown_0" in lines[0] and lines[-1] == "error: ... and 25 more problems"
    error = PresetError([f"p{i}" for i in range(45)])
    assert len(error.problems) == 45 and str(error).splitlines() == shown(error.problems)
    assert shown(["a", "b"]) == ["a", "b"]
