"""render --from FILE of a preset with a soundtrack: where the file does not carry what the
preset's sound file (audio.path) needs, or carries it damaged, the one message names the sound
file, not images, and says how to give it (--set audio.path=FILE); --images DIR gives a file's
images only, and its carried sound is still read from the file."""

from __future__ import annotations

import json
import os
import wave

import numpy as np
import pytest

from physarum.render.cli.main import main
from support import tiny_data, write_preset

RATE = 22050
SOUND_MESSAGE = (
    "names the sound file 'beat.wav' (audio.path) but carries neither it nor its soundtrack's features"
)


def render(*args) -> int:
    return main(["render", *map(str, args), "--quiet", "--backend", "torch", "--device", "cpu"])


@pytest.fixture(scope="module")
def sidecar(tmp_path_factory):
    """The sidecar (its embedded text) of a tiny render following a 1 s sound file it carries
    (audio.carry), the sound file then removed."""
    folder = tmp_path_factory.mktemp("sound")
    t = np.arange(RATE)
    samples = np.round(8000 * np.sin(2 * np.pi * 55 * t / RATE) * (1 + (t % (RATE // 2) < 2000))).astype(
        np.int16
    )
    with wave.open(str(folder / "beat.wav"), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(samples.tobytes())
    data = tiny_data(
        name="heard",
        audio={"path": "beat.wav", "carry": True},
        model={"deposit": {"audio": "loudness", "range": [2, 6]}},
        run={"steps": "audio", "steps_per_frame": 1},
        output={"formats": ["png"], "fps": 5},
    )
    here = os.getcwd()
    os.chdir(folder)  # the sound file's path embedded as the preset names it, relative
    try:
        assert render(write_preset(folder, data), "--out", folder / "a") == 0
    finally:
        os.chdir(here)
    os.remove(folder / "beat.wav")
    return json.loads((folder / "a" / "heard" / "heard-s3.json").read_text())


def crafted(sidecar, tmp_path, change) -> str:
    """The sidecar with its embedded text changed by `change` (text -> text), written in tmp_path."""
    path = tmp_path / "crafted.json"
    path.write_text(json.dumps({**sidecar, "preset_yaml": change(sidecar["preset_yaml"])}))
    return path


def without_block(text: str) -> str:
    return text[: text.index("# physarum images ")]


def refused(path, *extra, capsys) -> str:
    """The one message render --from `path` exits 2 with, having written nothing."""
    capsys.readouterr()
    assert render("--from", path, "--out", "o", *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert not os.path.exists("o")
    return err


def said(message: str) -> str:
    """The message without the file it names (a test's folder may say 'image')."""
    return message.split("crafted.json: ", 1)[1]


def test_a_sound_file_the_file_does_not_carry_is_named_as_a_sound_file(
    sidecar, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    path = crafted(sidecar, tmp_path, without_block)
    message = refused(path, capsys=capsys)
    assert SOUND_MESSAGE in message and "--set audio.path=FILE" in message and "image" not in said(message)


def test_images_dir_does_not_read_a_sound_file_as_an_image(sidecar, tmp_path, capsys, monkeypatch):
    """--images DIR with the sound file in it: the sound is still asked of the file (a stranger's
    file reads no local sound), and the message names the sound file (it said 'not an image file
    Pillow can read')."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "beat.wav").write_bytes(b"RIFF")
    message = refused(crafted(sidecar, tmp_path, without_block), "--images", "dir", capsys=capsys)
    assert SOUND_MESSAGE in message and "image" not in said(message)


def test_a_carried_sound_renders_with_images_dir(sidecar, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir").mkdir()
    assert render("--from", crafted(sidecar, tmp_path, str), "--out", "o", "--images", "dir") == 0
    assert (tmp_path / "o" / "heard" / "heard-s3.png").is_file()


def damaged_sound(text: str) -> str:
    """The first data line of the carried sound file replaced (its sha256 no longer matches)."""
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("# sound ")) + 1
    lines[at] = "# " + ("A" if lines[at][2] != "A" else "B") + lines[at][3:]
    return "\n".join(lines)


def test_a_damaged_carried_sound_file_is_named(sidecar, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    message = refused(crafted(sidecar, tmp_path, damaged_sound), capsys=capsys)
    assert "its carried soundtrack cannot be read" in message
    assert "the sound file 'beat.wav' does not match its sha256" in message
    assert "--set audio.path=FILE" in message and "image" not in said(message)


def test_a_damaged_sound_header_is_named(sidecar, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = crafted(sidecar, tmp_path, lambda t: t.replace('# sound {"path"', '# sound ["path"', 1))
    message = refused(path, capsys=capsys)
    assert "its carried soundtrack cannot be read" in message
    assert "the sound file's header is not JSON" in message and "image" not in said(message)


def test_a_cut_block_of_a_soundtrack_says_soundtrack(sidecar, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = crafted(sidecar, tmp_path, lambda t: t[: len(t) * 3 // 4])
    message = refused(path, capsys=capsys)
    assert "its carried soundtrack cannot be read" in message and "the file was cut short" in message


def test_the_sound_file_given_again_renders_a_file_that_carries_none(sidecar, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    t = np.arange(RATE)
    with wave.open(str(tmp_path / "elsewhere" / "mine.wav"), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(np.round(8000 * np.sin(2 * np.pi * 110 * t / RATE)).astype(np.int16).tobytes())
    path = crafted(sidecar, tmp_path, without_block)
    assert render("--from", path, "--out", "o", "--set", "audio.path=elsewhere/mine.wav") == 0
    assert (tmp_path / "o" / "heard" / "heard-s3.png").is_file()
