"""Audio-driven presets end to end (render/preset/audio.py, render/formats/mp4_audio.py): the same
bytes twice, `render --from` without the sound file, the MP4's audio stream in sync with its
frames, `run.steps: audio`, `output.sound: false`, and every bad input one message, exit 2,
nothing written."""

from __future__ import annotations

import json
import wave
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
import yaml

from physarum.render.cli.main import main
from physarum.render.preset import audio as soundtrack
from physarum.render.preset import build_preset
from support import gif_png_and_loop_on_each_backend, problems_of, tiny_data, write_preset

RATE = 44100


def write_wav(path: Path, samples: np.ndarray, rate: int = RATE, channels: int = 1, width: int = 2) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(width)
        out.setframerate(rate)
        out.writeframes(samples.tobytes())
    return path


def beat_track(seconds: float = 2.0, bpm: float = 120, rate: int = RATE) -> np.ndarray:
    """Int16 mono: a kick every beat over a 55 Hz bass line."""
    t = np.arange(int(rate * seconds))
    x = 0.25 * np.sin(2 * np.pi * 55 * t / rate)
    kick = np.exp(-np.arange(rate // 10) / (rate / 60)) * np.sin(
        2 * np.pi * 70 * np.arange(rate // 10) / rate
    )
    at = 0.0
    while at * rate < len(t):
        start = int(at * rate)
        end = min(len(t), start + len(kick))
        x[start:end] += 0.7 * kick[: end - start]
        at += 60 / bpm
    return np.round(x * 20000).astype(np.int16)


def audio_data(sound: Path, **sections) -> dict:
    model = {
        "sensor_distance": 5,
        "deposit": {"audio": "beat", "range": [2, 9], "release": "150ms"},
        "diffuse": 0.5,
        "decay": {"audio": "bass", "range": [0.05, 0.2], "attack": 10, "release": "250ms"},
    }
    data = tiny_data(
        audio={"path": str(sound)},
        model=model,
        run={"steps": "audio", "steps_per_frame": 2},
        look={"exposure": {"audio": "loudness", "range": [0.8, 1.6]}},
    )
    data.update(sections)
    return data


def render(preset_file: Path, out: Path, *extra: str) -> int:
    return main(["render", str(preset_file), "--out", str(out), "--quiet", "--backend", "torch", *extra])


@pytest.fixture
def track(tmp_path) -> Path:
    return write_wav(tmp_path / "beat.wav", beat_track())


def test_run_steps_follow_the_track_and_keys_follow_features(track):
    preset = build_preset(audio_data(track), "p.yaml")
    assert preset.frames == 40  # 2 s at 20 fps
    assert preset.run.steps == 80
    deposit = preset.model.deposit.resolved(preset.end_step)
    assert deposit[0] == (0, 9)  # a beat at the first frame
    assert all(2 <= value <= 9 for _, value in deposit)
    assert [step for step, _ in deposit] == sorted({step for step, _ in deposit})
    # frame f's value from step f * steps_per_frame + 1: every key a frame start
    assert all(step == 0 or (step - 1) % 2 == 0 for step, _ in deposit)
    assert all(10**4 % value.denominator == 0 for _, value in deposit)  # 4 decimals


def test_a_preset_following_audio_renders_the_same_bytes_twice_and_from_its_files(tmp_path, track):
    preset_file = write_preset(tmp_path, audio_data(track, name="pulse"))
    assert render(preset_file, tmp_path / "a") == 0
    assert render(preset_file, tmp_path / "b") == 0
    first, second = tmp_path / "a" / "pulse", tmp_path / "b" / "pulse"
    for fmt in ("gif", "mp4", "png"):
        assert (first / f"pulse-s3.{fmt}").read_bytes() == (second / f"pulse-s3.{fmt}").read_bytes()
    sidecar = json.loads((first / "pulse-s3.json").read_text())
    assert sidecar["audio"]["pcm"]["sha256"] == soundtrack.read_track(str(track)).sha256
    assert set(sidecar["audio"]["keys"]) == {"model.deposit", "model.decay", "look.exposure"}
    track.rename(tmp_path / "gone.wav")  # --from needs no sound file: the outputs carry the features
    for fmt in ("png", "gif", "mp4"):
        out = tmp_path / f"from-{fmt}"
        code = main(
            [
                "render",
                "--from",
                str(first / f"pulse-s3.{fmt}"),
                "--out",
                str(out),
                "--quiet",
                "--backend",
                "torch",
            ]
        )
        assert code == 0
        for kind in ("gif", "png"):
            assert (out / "pulse" / f"pulse-s3.{kind}").read_bytes() == (
                first / f"pulse-s3.{kind}"
            ).read_bytes()
        with av.open(str(out / "pulse" / "pulse-s3.mp4")) as again:
            assert not again.streams.audio  # the sound itself is carried only with audio.carry


@pytest.mark.interpreter
def test_an_audio_preset_renders_the_same_bytes_on_each_backend(tmp_path, track):
    """Values that change every frame (three keys and the look) give the reference's GIF and PNG
    on the Triton backend (on CUDA where present, else in the interpreter)."""
    data = audio_data(track, name="backends")
    data["run"] = {"steps": 24, "steps_per_frame": 2}
    found = gif_png_and_loop_on_each_backend(build_preset(data, "p.yaml"), tmp_path)
    assert found["torch"]["gif"] == found["triton"]["gif"]
    assert found["torch"]["png"] == found["triton"]["png"]


def test_audio_carry_renders_the_mp4_with_its_sound_from_its_files(tmp_path, track):
    data = audio_data(track, name="carried")
    data["audio"]["carry"] = True
    assert render(write_preset(tmp_path, data), tmp_path / "a") == 0
    first = tmp_path / "a" / "carried"
    track.unlink()
    out = tmp_path / "b"
    assert (
        main(
            [
                "render",
                "--from",
                str(first / "carried-s3.mp4"),
                "--out",
                str(out),
                "--quiet",
                "--backend",
                "torch",
            ]
        )
        == 0
    )
    for fmt in ("gif", "mp4", "png"):
        assert (out / "carried" / f"carried-s3.{fmt}").read_bytes() == (
            first / f"carried-s3.{fmt}"
        ).read_bytes()


def decoded_seconds(path: Path) -> tuple[float, float, str]:
    """(video seconds, decoded audio seconds, audio codec) of an MP4."""
    with av.open(str(path)) as container:
        video = container.streams.video[0]
        frames = sum(1 for _ in container.decode(video))
        fps = float(video.average_rate)
    with av.open(str(path)) as container:
        audio = container.streams.audio[0]
        samples = sum(frame.samples for frame in container.decode(audio))
        return frames / fps, samples / audio.rate, audio.codec_context.name


@pytest.mark.parametrize("kind", ["wav", "m4a", "mp3"])
def test_the_mp4_carries_the_soundtrack_in_sync(tmp_path, kind):
    wav = write_wav(tmp_path / "beat.wav", beat_track(3.0))
    sound = wav if kind == "wav" else encode(wav, tmp_path / f"beat.{kind}")
    data = audio_data(sound, name="sync")
    data["output"] = {**data["output"], "formats": ["mp4", "gif"]}
    assert render(write_preset(tmp_path, data), tmp_path / "o") == 0
    video, audio, codec = decoded_seconds(tmp_path / "o" / "sync" / "sync-s3.mp4")
    assert abs(video - audio) <= 1 / 20  # within a frame at 20 fps
    assert codec == {"wav": "aac", "m4a": "aac", "mp3": "mp3float"}[kind]  # m4a and mp3 copied
    assert b"soun" not in (tmp_path / "o" / "sync" / "sync-s3.gif").read_bytes()[:64]


def encode(wav: Path, path: Path) -> Path:
    """The WAV encoded by PyAV (AAC in M4A, MP3), as a user's file would be."""
    codec, fmt = {".m4a": ("aac", "mp4"), ".mp3": ("libmp3lame", "mp3")}[path.suffix]
    with av.open(str(path), "w", format=fmt) as out:
        stream = out.add_stream(codec, rate=RATE)
        stream.layout = "mono"
        size = stream.codec_context.frame_size or 1152
        resampler = av.AudioResampler(
            format=stream.codec_context.format.name, layout="mono", rate=RATE, frame_size=size
        )
        with av.open(str(wav)) as source:
            frames = [*source.decode(audio=0), None]
        for frame in frames:
            for chunk in resampler.resample(frame):
                out.mux(stream.encode(chunk))
        out.mux(stream.encode(None))
    return path


def test_sound_false_leaves_the_mp4_silent(tmp_path, track):
    data = audio_data(track, name="quiet")
    data["output"] = {**data["output"], "formats": ["mp4"], "sound": False}
    assert render(write_preset(tmp_path, data), tmp_path / "o") == 0
    with av.open(str(tmp_path / "o" / "quiet" / "quiet-s3.mp4")) as container:
        assert not container.streams.audio and container.streams.video


def test_a_preset_without_audio_dumps_as_before():
    preset = build_preset(tiny_data(), "p.yaml")
    assert "audio" not in preset.portable_dump() and "sound" not in preset.portable_dump()["output"]
    assert preset.soundtrack is None


def test_periodic_shapes_without_audio():
    data = tiny_data(
        model={**tiny_data()["model"], "deposit": {"wave": "square", "period": "6 steps", "range": [2, 8]}}
    )
    preset = build_preset(data, "p.yaml")
    values = [preset.model_params(0, step).deposit for step in range(0, 13)]
    # frames of 3 steps; frame f shown at step 3 (f + 1): square high for the first half-period
    assert values[:4] == [2, 2, 2, 2] and values[4:7] == [8, 8, 8] and values[7:10] == [2, 2, 2]
    beats = tiny_data(
        audio={"bpm": 120},
        model={**tiny_data()["model"], "decay": {"wave": "saw", "period": "1 beat", "range": [0.1, 0.3]}},
    )
    preset = build_preset(beats, "p.yaml")
    curve = preset.model.decay.resolved(preset.end_step)
    # 20 fps, 120 bpm: a beat every 10 frames, the saw rising 0.02 a frame
    assert [float(v) for _, v in curve[:3]] == [0.1, 0.12, 0.14]


# ---------------------------------------------------------------------------------------------
# Bad input: one message each, exit 2, nothing written


def refused(tmp_path: Path, capsys, data: dict) -> str:
    out = tmp_path / "out"
    assert render(write_preset(tmp_path, data), out) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err  # one message
    return err


def test_a_missing_sound_file(tmp_path, capsys):
    err = refused(tmp_path, capsys, audio_data(tmp_path / "nowhere.wav"))
    assert f"audio.path: no such sound file: {tmp_path / 'nowhere.wav'}" in err


ALLOWED = f"give a sound file ({soundtrack.SOUND_KINDS})"


def test_a_sound_file_that_is_missing_or_no_file_is_named_once_with_what_is_allowed(tmp_path, capsys):
    """`render pulse --set audio.path=/no/such.flac` said 'no such sound file: /no/such.flac
    (got '/no/such.flac')': the path twice and nothing of what a sound file may be."""
    missing, out = tmp_path / "such.flac", tmp_path / "out"
    assert main(["render", "pulse", "--set", f"audio.path={missing}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f".yaml: audio.path: no such sound file: {missing}; {ALLOWED}\n"), err
    assert err.count(str(missing)) == 1 and err.count("\n") == 1 and not out.exists()
    for given, named, problem in [
        (str(tmp_path), tmp_path, "is a folder, not a regular file"),
        ("nowhere.wav", tmp_path / "nowhere.wav", None),
    ]:
        err = refused(tmp_path, capsys, audio_data(Path(given)))
        if problem is None:  # relative to the preset file's folder, which the message says
            shape = f"no such sound file: {named} (relative to the preset's folder); {ALLOWED}"
        else:
            shape = f"{named} {problem}: {ALLOWED}"
        assert err.endswith(f"preset.yaml: audio.path: {shape}\n"), err
        assert "(got " not in err


def test_a_corrupt_sound_file(tmp_path, capsys):
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF\x10\x00\x00\x00WAVEfmt garbage" + bytes(range(256)) * 4)
    err = refused(tmp_path, capsys, audio_data(bad))
    assert "bad.wav" in err and ("cannot be decoded" in err or "not a sound file" in err)


def test_a_file_that_is_no_sound(tmp_path, capsys):
    text = tmp_path / "notes.wav"
    text.write_text("these are not samples\n" * 40)
    err = refused(tmp_path, capsys, audio_data(text))
    assert "not a sound file PyAV can read" in err


def test_a_huge_sound_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(soundtrack, "MAX_SOUND_BYTES", 1000)
    err = refused(tmp_path, capsys, audio_data(write_wav(tmp_path / "big.wav", beat_track(0.5))))
    assert "bytes; a sound file may have at most 1000" in err


def test_a_silent_sound_file(tmp_path, capsys):
    err = refused(tmp_path, capsys, audio_data(write_wav(tmp_path / "hush.wav", np.zeros(RATE, np.int16))))
    assert "is silent" in err


def test_a_zero_length_sound_file(tmp_path, capsys):
    err = refused(tmp_path, capsys, audio_data(write_wav(tmp_path / "empty.wav", np.zeros(0, np.int16))))
    assert "holds no sound" in err


def test_a_very_long_sound_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(soundtrack, "MAX_SECONDS", 1)
    err = refused(tmp_path, capsys, audio_data(write_wav(tmp_path / "long.wav", beat_track(2.0))))
    assert "a track may last at most 1 seconds" in err


def test_an_odd_rate_sound_file(tmp_path, capsys):
    err = refused(
        tmp_path, capsys, audio_data(write_wav(tmp_path / "odd.wav", beat_track(1.0, rate=4000), rate=4000))
    )
    assert "sample rate of 4000 Hz" in err and "8000 to 192000" in err


def test_an_unknown_feature(tmp_path, capsys, track):
    data = audio_data(track)
    data["model"]["deposit"] = {"audio": "bas", "range": [2, 9]}
    err = refused(tmp_path, capsys, data)
    assert "model.deposit.audio: no audio feature 'bas'; did you mean 'bass'? the features: loudness," in err
    assert err.count("error") == 1


def test_a_range_outside_the_keys_bounds(tmp_path, capsys, track):
    data = audio_data(track)
    data["model"]["decay"] = {"audio": "bass", "range": [0.05, 1.5]}
    err = refused(tmp_path, capsys, data)
    assert "model.decay: range 1: Input should be less than 1, not 1.5" in err


def test_following_audio_without_an_audio_section():
    data = tiny_data(model={**tiny_data()["model"], "deposit": {"audio": "bass", "range": [2, 9]}})
    (problem,) = problems_of(data)
    assert "model.deposit: follows the soundtrack, but the preset has no audio section" in problem


def test_the_resampler_is_exact():
    mono = np.array([0, 100, 200, 300, -400, 32767, -32768, 5], dtype=np.int16)
    assert soundtrack.resample(mono, 2 * soundtrack.RATE).tolist() == [50, 250, 16184, -16381]  # half up
    # from 8000 Hz: each output the time-weighted mean of the samples it covers
    up = soundtrack.resample(np.array([0, 8000], dtype=np.int16), 8000)
    assert up.tolist() == [0, 0, 1950, 8000, 8000]


def test_validate_shows_the_resolved_curves(tmp_path, track, capsys):
    assert main(["validate", str(write_preset(tmp_path, audio_data(track, name="shown")))]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ok  ") and "(shown: 40 frames, 48x32)" in out[0]
    assert out[1].startswith("    audio: ") and "2 s, " in out[1] and "bpm (detected)" in out[1]
    assert out[2].startswith("    model.deposit: audio beat in [2.0, 9.0]: ") and "most 9" in out[2]
    assert out[3].startswith("      |") and out[3].endswith("|") and len(out[3]) == 6 + 62
    assert any(line.startswith("    look.exposure: audio loudness") for line in out)


def test_settings_reach_into_a_followed_value(track):
    data = audio_data(track)
    preset = build_preset(
        data, "p.yaml", ["model.deposit.range.1=5", "model.decay.audio=mid", "model.deposit.release=50ms"]
    )
    assert preset.model.deposit.range == [2.0, 5.0] and preset.model.decay.audio == "mid"
    assert max(v for _, v in preset.model.deposit.resolved(preset.end_step)) == 5
    (problem,) = problems_of(data, ["model.deposit.rang=4"])
    assert (
        "model.deposit.rang: unknown key; did you mean 'range'? allowed here: audio, range, attack, release"
        in problem
    )


def test_the_carried_feature_table_reads_back_and_refuses_damage(track):
    from physarum.render.preset import carried
    from physarum.render.preset.provenance import embedded_text

    preset = build_preset(audio_data(track), "p.yaml")
    text, block = carried.split(embedded_text(preset))
    assert block.startswith("# physarum images 2\n# audio {")
    (entry,) = carried.read_block(block).values()
    assert np.array_equal(entry.analysis.table, soundtrack.analysis_of(preset).table)
    assert entry.analysis.bpm == soundtrack.analysis_of(preset).bpm and entry.sound is None
    lines = block.split("\n")
    data = next(i for i, line in enumerate(lines) if line.startswith("# audio ")) + 1
    lines[data] = "# " + ("A" if lines[data][2] != "A" else "B") + lines[data][3:]
    with pytest.raises(ValueError, match="feature table of .* is not"):
        carried.read_block("\n".join(lines))
    # a block of format 1 (images only) never holds audio entries
    with pytest.raises(ValueError, match="expected '# image"):
        carried.read_block(block.replace("# physarum images 2", "# physarum images 1", 1))


def test_from_a_file_at_another_fps_asks_for_the_sound_file(tmp_path, track, capsys):
    assert render(write_preset(tmp_path, audio_data(track, name="fps")), tmp_path / "a") == 0
    track.unlink()
    png = tmp_path / "a" / "fps" / "fps-s3.png"
    code = main(
        ["render", "--from", str(png), "--out", str(tmp_path / "b"), "--quiet", "--set", "output.fps=10"]
    )
    assert code == 2 and not (tmp_path / "b").exists()
    err = capsys.readouterr().err
    assert "audio.path: the file carries the features of" in err and "at 20 fps, not for 10 fps" in err


def test_a_checkpoint_resumes_in_the_middle_of_the_track(tmp_path, track):
    preset_file = write_preset(tmp_path, audio_data(track, name="resumed"))
    assert render(preset_file, tmp_path / "a", "--checkpoint-at", "40") == 0
    first = tmp_path / "a" / "resumed"
    checkpoint = first / "resumed-s3-checkpoint-40.npz"
    # the features the checkpoint carries; the sound file named again for the MP4's sound
    args = [
        "render",
        "--resume",
        str(checkpoint),
        "--quiet",
        "--backend",
        "torch",
        "--set",
        f"audio.path={track}",
    ]
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    for fmt in ("gif", "mp4", "png"):
        assert (tmp_path / "b" / "resumed" / f"resumed-s3.{fmt}").read_bytes() == (
            first / f"resumed-s3.{fmt}"
        ).read_bytes()
    track.unlink()  # without it: the same frames, a silent MP4
    assert main([*args[:-2], "--out", str(tmp_path / "c")]) == 0
    for fmt in ("gif", "png"):
        assert (tmp_path / "c" / "resumed" / f"resumed-s3.{fmt}").read_bytes() == (
            first / f"resumed-s3.{fmt}"
        ).read_bytes()


@pytest.mark.slow  # a 3-minute track: 5400 frames (about 20 s on 2 CPU cores)
def test_sound_and_picture_stay_in_sync_over_a_three_minute_track(tmp_path):
    loop = beat_track(4.0, bpm=120, rate=22050)
    sound = write_wav(tmp_path / "long.wav", np.resize(loop, 180 * 22050).astype(np.int16), rate=22050)
    data = {
        "name": "long",
        "seed": 1,
        "canvas": {"width": 16, "height": 16},
        "agents": {"count": 50},
        "model": {"sensor_distance": 3, "deposit": {"audio": "bass", "range": [2, 9], "release": "200ms"}},
        "run": {"steps": "audio", "steps_per_frame": 1},
        "output": {"formats": ["mp4"], "fps": 30},
        "audio": {"path": str(sound)},
    }
    assert render(write_preset(tmp_path, data), tmp_path / "o") == 0
    video, audio, _ = decoded_seconds(tmp_path / "o" / "long" / "long-s1.mp4")
    assert video == 180 and abs(audio - video) <= 1 / 30


def test_keyframes_in_beats_and_bars():
    model = {**tiny_data()["model"], "decay": {"keys": {0: 0.1, "2 beats": 0.3, "1 bar": 0.1}}}
    preset = build_preset(
        tiny_data(audio={"bpm": 120}, model=model, run={"steps": 150, "steps_per_frame": 3}), "p.yaml"
    )
    # 120 bpm: a beat is 0.5 s, 10 frames at 20 fps, 30 steps of 3 a frame; a bar 4 beats
    assert [step for step, _ in preset.model.decay.resolved(preset.end_step)] == [0, 60, 120]
    assert preset.model_params(0, 90).decay == 0.2  # halfway from 2 beats to the bar, linear
    again = build_preset(yaml.safe_load(preset.to_yaml()), "again.yaml")  # the keys read back as written
    assert again.model.decay.resolved(again.end_step) == preset.model.decay.resolved(preset.end_step)
    (problem,) = problems_of(tiny_data(model=model))
    assert "model.decay.keys: a key in beats or bars needs a tempo" in problem
    (problem,) = problems_of(tiny_data(model={**model, "decay": {"keys": {"2 beets": 0.3}}}))
    assert "a time in beats or bars of the audio section's tempo ('8 bars')" in problem


def test_keyframes_in_bars_follow_a_tracks_detected_tempo(track):
    data = audio_data(track)
    data["model"]["sensor_angle"] = {"ease": "hold", "keys": {0: 20, "1 bar": 40}}
    preset = build_preset(data, "p.yaml")
    analysis = soundtrack.analysis_of(preset)
    (_, _), (step, value) = preset.model.sensor_angle.resolved(preset.end_step)
    seconds = analysis.offset + 4 * 60 / analysis.bpm
    assert value == 40 and step == round(seconds * 20 * 2)


def test_a_sweep_varies_the_mapping_and_each_job_renders_as_alone(tmp_path, track):
    base = write_preset(tmp_path, audio_data(track, name="mapped"))
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "name": "mapping",
                "base": str(base),
                "grid": {"model.deposit.range.1": [5, 9], "model.deposit.audio": ["beat", "bass"]},
            }
        )
    )
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "s"), "--backend", "torch", "--quiet"]) == 0
    job = tmp_path / "s" / "mapping" / "mapping-0003"
    sidecar = json.loads((job / "mapping-0003-s3.json").read_text())
    assert sidecar["audio"]["keys"]["model.deposit"]["follows"] == "audio bass"
    assert sidecar["audio"]["keys"]["model.deposit"]["range"] == [2.0, 9.0]
    assert (
        main(
            [
                "render",
                "--from",
                str(job / "mapping-0003-s3.png"),
                "--out",
                str(tmp_path / "a"),
                "--quiet",
                "--backend",
                "torch",
            ]
        )
        == 0
    )
    assert (tmp_path / "a" / "mapping-0003" / "mapping-0003-s3.gif").read_bytes() == (
        job / "mapping-0003-s3.gif"
    ).read_bytes()


def test_loop_bars_take_the_audio_sections_tempo(tmp_path, track, capsys):
    from physarum.render.base.errors import RenderError
    from physarum.render.out.specs import check_loop_bars

    bars = {"formats": ["png"], "fps": 20, "loop_bars": 1}
    # 1 bar at 120 bpm is 2 s: the track's 40 frames at 20 fps exactly
    given = build_preset(audio_data(track, audio={"path": str(track), "bpm": 120}, output=bars), "a.yaml")
    assert check_loop_bars(given) == ["loop: 1 bars at 120 BPM (audio.bpm) and 20 fps = 40 frames exactly"]
    # the detected tempo, to 1/100 bpm, gives the bar's frames, rounded to the nearest
    detected = build_preset(audio_data(track, output=bars), "a.yaml")
    bpm = soundtrack.analysis_of(detected).bpm
    exact = Fraction(4 * 60 * 20) / bpm
    frames = int(exact + Fraction(1, 2))
    if frames == detected.frames:
        assert "(the track's, detected)" in check_loop_bars(detected)[0]
    else:
        with pytest.raises(
            RenderError, match=rf"at {float(bpm):g} BPM \(the track's, detected\) .* are {frames} frames"
        ):
            check_loop_bars(detected)
    # output.bpm wins over the track's
    both = build_preset(audio_data(track, output={**bars, "bpm": 120}), "a.yaml")
    assert check_loop_bars(both) == ["loop: 1 bars at 120 BPM and 20 fps = 40 frames exactly"]


def test_loop_bars_without_a_tempo_are_refused(tmp_path, capsys):
    t = np.arange(RATE * 2)
    sine = write_wav(tmp_path / "sine.wav", (10000 * np.sin(2 * np.pi * 220 * t / RATE)).astype(np.int16))
    flat = audio_data(sine, model={"deposit": 5}, look={}, output={"formats": ["png"], "loop_bars": 1})
    err = refused(tmp_path, capsys, flat)
    assert "output.loop_bars: the track has no tempo to count bars in (no onsets)" in err
    err = refused(tmp_path, capsys, tiny_data(output={"formats": ["png"], "loop_bars": 1}))
    assert "output.loop_bars needs a tempo: set output.bpm, or add an audio section" in err
