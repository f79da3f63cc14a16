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


def carried_block(**header) -> str:
    """A carried block of a soundtrack's features whose header's fields are replaced by `header`."""
    from fractions import Fraction

    from physarum.render.preset import audio_features, carried

    analysis = audio_features.tempo_only(8, 20, Fraction(120), Fraction(0))
    text = carried.block([], [carried.CarriedAudio("beat.wav", analysis)])
    for key, value in header.items():
        old = {"offset": '"offset": "0"', "bpm": '"bpm": "120"', "samples": '"samples": 0'}[key]
        assert old in text
        text = text.replace(old, f'"{key}": {value}', 1)
    return text


@pytest.mark.parametrize(
    "header",
    [{"offset": '"1e99999999"'}, {"bpm": '"1e-99999999"'}, {"samples": "-7"}, {"samples": str(10**30)}],
)
def test_a_carried_tables_numbers_are_refused_before_they_cost(header):
    """Fraction('1e99999999') computes 10**99999999: a few bytes in a --from file took minutes."""
    from physarum.render.preset import carried

    assert carried.read_block(carried_block())  # the block as written reads back
    with pytest.raises(ValueError, match="bpm or offset is not a fraction|samples are not 0 to"):
        carried.read_block(carried_block(**header))


@pytest.mark.parametrize("section", ["wave", "bpm"])
def test_a_preset_of_millions_of_frames_with_curves_is_refused_before_they_are_worked_out(section):
    """run.steps 3,000,000 at 1 a frame and a sine wave: validate took 73 s and 0.9 GB before."""
    import time

    from physarum.render.preset import PresetError, build_preset
    from support import tiny_data

    model = {**tiny_data()["model"], "deposit": {"wave": "sine", "period": "10 steps", "range": [2, 6]}}
    data = tiny_data(model=model, run={"steps": 3_000_000, "steps_per_frame": 1})
    if section == "bpm":
        data = tiny_data(audio={"bpm": 120}, run={"steps": 3_000_000, "steps_per_frame": 1})
    began = time.perf_counter()
    with pytest.raises(PresetError, match="3000000 frames; a preset with an audio section .* at most 200000"):
        build_preset(data, "long.yaml")
    assert time.perf_counter() - began < 5
