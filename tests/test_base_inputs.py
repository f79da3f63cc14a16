"""Input files: only regular files are opened, texts are bounded, bad values quoted in short."""

from __future__ import annotations

import os

import pytest

from physarum.render.base.inputs import EXCERPT_CHARS, excerpt, file_problem, read_text
from support import fifo


def test_excerpt_quotes_short_values_whole_and_cuts_long_ones():
    assert excerpt(500) == "500" and excerpt("lots") == "'lots'" and excerpt({"a": [1, 2]}) == "{'a': [1, 2]}"
    for value in ("x" * 10_000, list(range(10_000)), {str(i): i for i in range(10_000)}):
        cut = excerpt(value)
        assert len(cut) == EXCERPT_CHARS and cut.endswith("...")
        assert cut[:10] == repr(value)[:10]


def test_only_regular_files_are_inputs(tmp_path):
    assert file_problem(tmp_path / "absent") == "no such file"
    assert file_problem(tmp_path) == "is a folder, not a regular file"
    assert file_problem(fifo(tmp_path / "pipe")) == "is a FIFO (named pipe), not a regular file"
    if os.path.exists("/dev/null"):
        assert file_problem("/dev/null") == "is a character device, not a regular file"
    (tmp_path / "ok.yaml").write_text("a: 1\n")
    assert file_problem(tmp_path / "ok.yaml") is None


def test_read_text_is_bounded_and_utf8(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * 101)
    with pytest.raises(ValueError, match="is 101 bytes; at most 100 bytes are read"):
        read_text(path, limit=100)
    path.write_bytes(b"a: \xff\n")
    with pytest.raises(ValueError, match="is not UTF-8 text"):
        read_text(path)
    with pytest.raises(ValueError, match="FIFO"):
        read_text(fifo(tmp_path / "pipe"))
