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


@pytest.mark.parametrize("name", ["shared.mp4", "shared.mov", "shared.webm"])
def test_a_video_from_a_stranger_opens_no_file_it_names(tmp_path, name):
    """render --from x.mp4 where x.mp4 is an ffconcat text: FFmpeg's probe picked the concat
    demuxer, which opened the files it names (here a FIFO, where the read blocked for ever)."""
    import subprocess
    import sys

    os.mkfifo(tmp_path / "pipe")
    (tmp_path / name).write_bytes(b"ffconcat version 1.0\nfile pipe\n")
    command = [sys.executable, "-m", "physarum.render.cli", "render", "--from", name, "--out", "o", "--quiet"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and f"{name}: carries no physarum preset" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "o").exists()
