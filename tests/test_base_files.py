"""Files written whole or not at all: exclusive temporary files, a render's files committed
together (all or none), stale temporary files of killed runs removed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from physarum.render.base.files import (
    PartialFile,
    commit_together,
    remove_stale_parts_of,
    temporary_of,
    write_json,
)


def partial_with(path, text: str) -> PartialFile:
    partial = PartialFile(path)
    with partial.open("w") as file:
        file.write(text)
    return partial


def test_commit_together_replaces_all_or_none(tmp_path, monkeypatch):
    names = [tmp_path / f"{i}.txt" for i in range(3)]
    for path in names[:2]:
        path.write_text(f"earlier {path.name}")
    replace = PartialFile.replace

    def failing_last(partial):
        if partial.path == names[2]:
            raise OSError("disk full")
        replace(partial)

    monkeypatch.setattr(PartialFile, "replace", failing_last)
    with pytest.raises(OSError, match="disk full"):
        commit_together([partial_with(path, "new") for path in names])
    assert [p.read_text() for p in names[:2]] == ["earlier 0.txt", "earlier 1.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.txt", "1.txt"]
    monkeypatch.setattr(PartialFile, "replace", replace)
    replaced = commit_together([partial_with(path, "new") for path in names])
    assert [p.read_text() for p in names] == ["new"] * 3 and replaced == names[:2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.txt", "1.txt", "2.txt"]


def test_commit_together_keeps_every_earlier_file_when_keeping_one_fails(tmp_path, monkeypatch):
    """A failure while keeping the second target's earlier file (no hard links and a full disk,
    say) comes after the first target was moved: the first gets its earlier file back."""
    from physarum.render.base import files

    names = [tmp_path / f"{i}.txt" for i in range(2)]
    for path in names:
        path.write_text(f"earlier {path.name}")
    keep = files._keep_earlier

    def failing_second(path):
        if path == names[1]:
            raise OSError("disk full")
        return keep(path)

    monkeypatch.setattr(files, "_keep_earlier", failing_second)
    with pytest.raises(OSError, match="disk full"):
        commit_together([partial_with(path, "new") for path in names])
    assert [p.read_text() for p in names] == ["earlier 0.txt", "earlier 1.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.txt", "1.txt"]


def test_a_link_planted_at_the_temporary_name_is_never_written_through(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    target = tmp_path / "out" / "x.json"
    target.parent.mkdir()
    temporary_of(target, os.getpid()).symlink_to(outside)
    with pytest.raises(FileExistsError, match="already at this temporary name"):
        write_json(target, {"a": 1})
    assert outside.read_text() == "keep me" and not target.exists()
    assert temporary_of(target, os.getpid()).is_symlink()  # not ours: left for its owner to see


def test_stale_parts_of_dead_runs_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(dead.stdout)
    target = tmp_path / "tiny-s3.gif"
    stale = [temporary_of(target, dead_pid), temporary_of(target, dead_pid, "earlier")]
    live = temporary_of(target, os.getppid())
    other = temporary_of(tmp_path / "other.gif", dead_pid)
    for part in (*stale, live, other):
        part.write_text("x")
    assert sorted(remove_stale_parts_of(target)) == sorted(stale)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])


def test_parse_json_refuses_nesting_beyond_its_depth_in_linear_time():
    from physarum.render.base.files import MAX_JSON_DEPTH, parse_json

    assert parse_json('{"a": ["[[[{", {"b": "\\"]]"}]}') == {"a": ["[[[{", {"b": '"]]'}]}
    deepest = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(deepest) == eval(deepest)
    for text in ("[" + deepest + "]", "[" * 1_000_000):
        with pytest.raises(
            ValueError, match=f"nests {MAX_JSON_DEPTH + 1 if len(text) < 999 else 1_000_000} levels deep"
        ):
            parse_json(text)
    with pytest.raises(ValueError):
        parse_json('{"a": ')
