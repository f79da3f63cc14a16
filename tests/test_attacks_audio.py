"""Attacks on a preset's soundtrack from a stranger (render/preset/audio.py,
render/formats/mp4_audio.py): a sound file, or the sound a --from file carries, reads only itself."""

from __future__ import annotations

import pytest
from test_audio_render import audio_data, beat_track, write_wav

from physarum.render.cli.main import main
from physarum.render.formats import mp4_audio
from physarum.render.preset import audio as soundtrack
from support import write_preset

CONCAT = b"ffconcat version 1.0\nfile private.wav\n"  # FFmpeg's concat demuxer: reads private.wav


def test_a_sound_file_naming_another_file_is_refused(tmp_path, capsys):
    write_wav(tmp_path / "private.wav", beat_track(1.0))
    (tmp_path / "song.wav").write_bytes(CONCAT)
    preset_file = write_preset(tmp_path, audio_data(tmp_path / "song.wav"))
    assert main(["validate", str(preset_file)]) == 2
    err = capsys.readouterr().err
    assert "song.wav is not a sound file PyAV can read" in err and "Traceback" not in err


def test_a_carried_sound_naming_another_file_reads_nothing(tmp_path, monkeypatch):
    write_wav(tmp_path / "private.wav", beat_track(1.0))
    monkeypatch.chdir(tmp_path)  # where the concat demuxer would look for private.wav
    with pytest.raises(ValueError, match="not a sound file PyAV can read"):
        soundtrack.decode(CONCAT, "the sound beat.wav the file carries")
    with pytest.raises(ValueError, match="beat.wav: the soundtrack cannot be read"):
        mp4_audio.open_sound(mp4_audio.Soundtrack(CONCAT, "beat.wav"))
