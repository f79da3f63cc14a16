"""Attacks on what a command is given to read (render/preset/catalog.py): a preset argument that
is something other than a file is named for what it is."""

from __future__ import annotations

import os

import pytest

from physarum.render.cli.main import main


@pytest.mark.parametrize("command", ["render", "validate", "still"])
def test_a_preset_argument_that_is_no_file_is_named_for_what_it_is(tmp_path, capsys, monkeypatch, command):
    """/dev/zero, a FIFO or a folder given as PRESET was 'no such file, and no curated preset'."""
    monkeypatch.chdir(tmp_path)
    os.mkfifo("pipe")
    os.mkdir("folder")
    for name, what in [
        ("/dev/zero", "is a character device"),
        ("pipe", "is a FIFO"),
        ("folder", "is a folder"),
    ]:
        assert main([command, name]) == 2
        err = capsys.readouterr().err
        assert f"{name}: {what}" in err and "no such file" not in err and "Traceback" not in err
    assert main([command, "nothing-here"]) == 2
    assert "no such file, and no curated preset" in capsys.readouterr().err
    assert sorted(os.listdir()) == ["folder", "pipe"]
