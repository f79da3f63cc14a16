"""The errors a user sees: printable text, messages of failed file operations and of memory."""

from __future__ import annotations

import errno

import torch

from physarum.render.errors import machine_problem, os_error_message, printable


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
