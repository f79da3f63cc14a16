"""The frame journal: frames written and read back exactly, and a journal that is not the one a
checkpoint records (changed, truncated, crafted) refused with one message before any frame of it
is fed."""

from __future__ import annotations

import dataclasses
import hashlib
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from physarum.render.formats.contract import Frame
from physarum.render.out import journal as jn
from physarum.render.out.journal import JournalError, JournalLacks, JournalWriter, Layout, open_journal
from support import tiny_data, write_preset

RNG = np.random.default_rng()  # sizes the tests do not fix in advance; the seed is in the ids
SEED = int(RNG.integers(1 << 31))


def layout(rng: np.random.Generator, kinds: int = jn.PREVIEW | jn.RGB) -> Layout:
    width, height = (int(v) for v in rng.integers(8, 80, 2))
    return Layout(kinds, (max(1, width // 2), max(1, height // 2)), (width, height))


def frames(rng: np.random.Generator, shape: Layout, count: int) -> list[Frame]:
    (pw, ph), (w, h) = shape.preview, shape.canvas
    return [
        Frame(
            n,
            rng.integers(0, 256, (ph, pw), np.uint8),
            rng.integers(0, 256, (256, 3), np.uint8),
            np.repeat(rng.integers(0, 256, (h, w, 1), np.uint8), 3, axis=2),
        )
        for n in range(count)
    ]


def written(tmp_path: Path, rng: np.random.Generator, count: int = 5):
    shape = layout(rng)
    made = frames(rng, shape, count)
    writer = JournalWriter(tmp_path / "t-journal-0123456789abcdef.bin", shape, limit=count)
    for frame in made:
        writer.write(frame)
    mark = writer.mark()
    writer.close()
    return shape, made, mark


@pytest.mark.parametrize("seed", [SEED, SEED + 1])
def test_a_journal_reads_back_the_frames_written_and_only_those_asked_for(tmp_path, seed):
    rng = np.random.default_rng(seed)
    shape, made, mark = written(tmp_path, rng, count=int(rng.integers(1, 7)))
    assert mark.size == (tmp_path / mark.name).stat().st_size <= shape.bound(mark.frames)
    source = open_journal(tmp_path, mark, shape, jn.PREVIEW | jn.RGB, first=mark.frames)
    for back, frame in zip(source.frames(jn.PREVIEW | jn.RGB), made, strict=True):
        assert back.number == frame.number
        for name in ("preview", "palette", "rgb"):
            assert np.array_equal(getattr(back, name), getattr(frame, name))
    assert all(f.rgb is None and f.preview is not None for f in source.frames(jn.PREVIEW))


def test_a_journal_keeps_only_the_frames_its_last_checkpoint_covers(tmp_path):
    rng = np.random.default_rng(SEED)
    shape = layout(rng)
    writer = JournalWriter(tmp_path / "t-journal-0123456789abcdef.bin", shape, limit=2)
    for frame in frames(rng, shape, 4):
        writer.write(frame)
    assert writer.mark().frames == 2


def test_a_continued_journal_writes_after_its_prefix_and_gives_the_same_bytes(tmp_path):
    rng = np.random.default_rng(SEED)
    shape, made, mark = written(tmp_path, rng, count=4)
    whole = (tmp_path / mark.name).read_bytes()
    first = JournalWriter(tmp_path / mark.name, shape, limit=2)  # a render killed after 2 frames
    for frame in made[:2]:
        first.write(frame)
    early = first.mark()
    first.close()
    source = open_journal(tmp_path, early, shape, jn.RGB, first=2)
    again = JournalWriter(tmp_path / mark.name, shape, limit=4, source=source)
    for frame in made:  # the re-fed frames are passed by, the rest appended
        again.write(frame)
    assert again.mark() == mark and (tmp_path / mark.name).read_bytes() == whole


def tamper(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    path.write_bytes(bytes(raw))


def flip(path: Path, offset: int) -> None:
    """Change the byte at `offset` (all its bits: a fixed new value may equal the old one)."""
    tamper(path, offset, bytes([path.read_bytes()[offset] ^ 0xFF]))


def bomb_record(shape: Layout, number: int) -> bytes:
    data = zlib.compress(b"\0" * (shape.raw_bytes * 4), 9)  # inflates past its frame's size
    return jn.RECORD.pack(jn.TAG, number, len(data)) + data


CRAFTED = {
    "a changed byte (another sha256)": lambda p, m, s: (flip(p, m.size - 1), m),
    "truncated": lambda p, m, s: (p.write_bytes(p.read_bytes()[: m.size // 2]), m),
    "a huge declared size": lambda p, m, s: (None, dataclasses.replace(m, size=1 << 60)),
    "more frames than the checkpoint's": lambda p, m, s: (None, dataclasses.replace(m, frames=m.frames + 3)),
    "a record of a huge length": lambda p, m, s: (
        tamper(p, jn.HEADER.size + 8, struct.pack("<Q", 1 << 50)),
        m,
    ),
    "a decompression bomb": lambda p, m, s: (
        p.write_bytes(s.header() + bomb_record(s, 0)),
        dataclasses.replace(m, frames=1, size=jn.HEADER.size + len(bomb_record(s, 0))),
    ),
    "another canvas": lambda p, m, s: (tamper(p, 28, struct.pack("<I", s.canvas[0] + 1)), m),
    "not a journal": lambda p, m, s: (p.write_bytes(b"GIF89a" + bytes(m.size)), m),
}


@pytest.mark.parametrize("case", CRAFTED)
def test_a_crafted_journal_is_refused_before_a_frame_is_fed(tmp_path, case):
    rng = np.random.default_rng(SEED)
    shape, _, mark = written(tmp_path, rng, count=3)
    path = tmp_path / mark.name
    _, claimed = CRAFTED[case](path, mark, shape)
    first = 3
    if case == "a decompression bomb":  # one frame, recorded with its true sha256
        claimed = dataclasses.replace(claimed, sha256=hashlib.sha256(path.read_bytes()).hexdigest())
        first = 1
    with pytest.raises(JournalError) as caught:
        open_journal(tmp_path, claimed, shape, jn.PREVIEW, first=first)
    assert not isinstance(caught.value, JournalLacks) and str(caught.value).startswith(str(path))


def test_a_journal_not_beside_its_checkpoint_or_without_the_frames_needed_is_not_an_error(tmp_path):
    rng = np.random.default_rng(SEED)
    shape = layout(rng, kinds=jn.PREVIEW)
    writer = JournalWriter(tmp_path / "t-journal-0123456789abcdef.bin", shape, limit=1)
    writer.write(frames(rng, shape, 1)[0])
    mark = writer.mark()
    with pytest.raises(JournalLacks, match="no RGB frames"):
        open_journal(tmp_path, mark, shape, jn.RGB, first=1)
    with pytest.raises(JournalLacks, match="not beside it"):
        open_journal(tmp_path / "elsewhere", mark, shape, jn.PREVIEW, first=1)


# ---------------------------------------------------------------------------------------------
# Through the command: one message, exit 2, nothing written

DATA = tiny_data(run={"steps": 24, "steps_per_frame": 3}, output={"formats": ["gif", "png"]})


def test_a_resume_whose_journal_was_changed_is_one_message_and_exit_2(tmp_path, capsys):
    out = tmp_path / "whole"
    command = ["render", str(write_preset(tmp_path, DATA)), "--out", str(out), "--quiet", "--device", "cpu"]
    assert main([*command, "--checkpoint-at", "13"]) == 0
    (journal,) = (out / "tiny").glob("*-journal-*.bin")
    tamper(journal, journal.stat().st_size - 3, b"\x01\x02\x03")
    capsys.readouterr()
    again = tmp_path / "again"
    resume = ["render", "--resume", str(out / "tiny" / "tiny-s3-checkpoint-13.npz"), "--quiet"]
    assert main([*resume, "--out", str(again), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {journal}") and "sha256" in err[0], err
    assert not again.exists()


def test_a_journal_that_cannot_be_written_stops_the_render_with_its_name(tmp_path):
    rng = np.random.default_rng(SEED)
    shape = layout(rng)
    writer = JournalWriter(tmp_path / "t-journal-0123456789abcdef.bin", shape, limit=3)
    writer.file.close()  # as a full disk would: the thread's write fails
    writer.write(frames(rng, shape, 1)[0])
    with pytest.raises(
        RenderError, match="t-journal-0123456789abcdef.bin: the frame journal cannot be written"
    ):
        writer.mark()
    writer.close()


def test_a_journal_is_never_read_or_written_through_a_link_planted_at_its_name(tmp_path, capsys):
    """A checkpoint's folder may come from a stranger: a link at its journal's name (leading to a
    private file) is refused, exit 2, its target neither read nor written (test_fuzz found the
    read: a resume re-fed the file the link led to)."""
    out, private = tmp_path / "whole", tmp_path / "private.txt"
    private.write_bytes(b"private")
    command = ["render", str(write_preset(tmp_path, DATA)), "--quiet", "--device", "cpu"]
    assert main([*command, "--out", str(out), "--checkpoint-at", "13"]) == 0
    (journal,) = (out / "tiny").glob("*-journal-*.bin")
    checkpoint = out / "tiny" / "tiny-s3-checkpoint-13.npz"
    journal.unlink()
    journal.symlink_to(private)
    capsys.readouterr()
    resume = ["render", "--resume", str(checkpoint), "--quiet", "--device", "cpu"]
    assert main([*resume, "--out", str(tmp_path / "again")]) == 2  # read through the link
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {journal}") and "is a link" in err[0], err
    third = tmp_path / "third" / "tiny"  # the same render again, into a folder with the link
    third.mkdir(parents=True)
    (third / journal.name).symlink_to(private)
    assert main([*command, "--out", str(third.parent), "--checkpoint-at", "13"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a link" in err[0], err
    assert private.read_bytes() == b"private" and journal.is_symlink()
    assert [p.name for p in third.iterdir()] == [journal.name]  # nothing written
