"""The streamed decode (render/preset/audio.py, Resampler): mixed and resampled block by block
as PyAV yields frames, it gives exactly the integers of the whole-track decode it replaced
(the PCM sha256 in sidecars must not change), on every rate, channel count and sample format."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from physarum.render.preset import audio

RATE = audio.RATE
RATES = (8000, 11025, 22050, 44100, 48000, 96000, 192000)
LAYOUTS = {1: "mono", 2: "stereo", 6: "5.1"}
FORMATS = {"s16": ("pcm_s16le", np.int16), "s32": ("pcm_s32le", np.int32), "flt": ("pcm_f32le", np.float32)}


def whole_track_resample(mono: np.ndarray, rate: int, block: int = 1 << 20) -> np.ndarray:
    """The whole-track resample as it was before streaming (frozen here as the reference)."""
    if rate == RATE:
        return mono.astype(np.int16)
    n = len(mono)
    count = n * RATE // rate
    out = np.empty(count, dtype=np.int16)
    for j0 in range(0, count, block):
        j1 = min(count, j0 + block)
        i0 = j0 * rate // RATE
        i1 = min(n, -(-j1 * rate // RATE) + 1)
        local = mono[i0:i1].astype(np.int64)
        prefix = np.concatenate(([0], np.cumsum(local))) * RATE

        def integral(x: np.ndarray) -> np.ndarray:
            i, rem = np.divmod(x, RATE)
            k = i - i0
            inside = np.minimum(k, len(local) - 1)
            return prefix[k] + np.where(rem > 0, local[inside] * rem, 0)

        j = np.arange(j0, j1 + 1, dtype=np.int64)
        area = np.diff(integral(j * rate))
        out[j0:j1] = ((2 * area + rate) // (2 * rate)).astype(np.int16)
    return out


def whole_track_pcm(path: Path) -> np.ndarray:
    """The file's PCM the old way: every frame mixed, the whole track concatenated, then resampled."""
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        rate, parts = stream.codec_context.sample_rate, []
        for frame in container.decode(stream):
            data, count = frame.to_ndarray(), frame.layout.nb_channels
            data = data if frame.format.is_planar else data.reshape(-1, count).T
            parts.append(audio.mix(audio.to_int16(data, frame.format.name.rstrip("p"))))
    return whole_track_resample(np.concatenate(parts), rate)


def write_sound(path: Path, rate: int, channels: int, kind: str, samples: int, seed: int) -> Path:
    """A WAV of `samples` random samples a channel (floats a little past full scale, to clip)."""
    codec, dtype = FORMATS[kind]
    rng = np.random.default_rng(seed)
    if kind == "flt":
        data = rng.uniform(-1.1, 1.1, size=(samples, channels)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, size=(samples, channels), endpoint=True, dtype=dtype)
    with av.open(str(path), "w", format="wav") as out:
        stream = out.add_stream(codec, rate=rate, layout=LAYOUTS[channels])
        for at in range(0, samples, 3001):  # frames of a size that divides nothing here
            piece = np.ascontiguousarray(data[at : at + 3001]).reshape(1, -1)
            frame = av.AudioFrame.from_ndarray(piece, format=kind, layout=LAYOUTS[channels])
            frame.sample_rate, frame.pts = rate, at
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


@pytest.mark.parametrize("rate", RATES)
def test_the_resampler_streams_the_whole_track_resample(monkeypatch, rate):
    monkeypatch.setattr(audio, "CHUNK", 997)  # many flushes, none on a block boundary
    monkeypatch.setattr(audio, "BLOCK", 1009)
    rng = np.random.default_rng(rate)
    mono = rng.integers(-32768, 32767, size=rate + 4 * 1009 + 37, endpoint=True, dtype=np.int16)
    expected = whole_track_resample(mono, rate)
    cuts = np.sort(rng.choice(np.arange(1, len(mono)), size=400, replace=False))
    resampler = audio.Resampler(rate)
    for piece in np.split(mono, cuts):  # pieces of 1 .. thousands of samples, some of 1
        resampler.push(piece)
        assert len(resampler.carry) < rate / RATE + 2 + audio.CHUNK  # the carry stays bounded
    streamed = resampler.result()
    assert streamed.dtype == np.int16 and len(streamed) == len(mono) * RATE // rate
    assert np.array_equal(streamed, expected)


@pytest.mark.parametrize("rate", RATES)
def test_short_tracks_stream_the_same(rate):
    for n in range(0, 3 * rate // RATE + 5):  # from no output sample to a few
        mono = np.arange(n, dtype=np.int16) * 1237 - 20000
        resampler = audio.Resampler(rate)
        for value in mono:
            resampler.push(np.array([value], dtype=np.int16))
        assert np.array_equal(resampler.result(), whole_track_resample(mono, rate))


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_a_decoded_file_has_the_whole_track_decodes_integers(tmp_path, monkeypatch, kind):
    monkeypatch.setattr(audio, "CHUNK", 4099)  # several resampled chunks a file
    for rate in RATES:
        for channels in LAYOUTS:
            samples = rate * 3 // 10 + 4099 + 13  # divides neither the chunk nor the frames
            path = write_sound(
                tmp_path / f"{rate}-{channels}.wav", rate, channels, kind, samples, rate + channels
            )
            track = audio.decode(str(path), path.name)
            expected = whole_track_pcm(path)
            assert (track.rate, track.channels) == (rate, channels)
            assert len(expected) == samples * RATE // rate and np.array_equal(track.pcm, expected), (
                rate,
                channels,
            )


def test_the_curated_soundtracks_keep_their_pcm():
    """presets/audio's tracks decode to the PCM their sidecars record (sha256 before streaming)."""
    root = Path(__file__).resolve().parents[1] / "presets" / "audio"
    pinned = {
        "pulse.flac": (352800, "822ce61c8fc7a9123da21d437fc26a3c52fd1aefbe72529be295977b0a02523f"),
        "rolling.flac": (330750, "4c75300b4c16504df0260fa5ba2478565a0eb6ed7f29441bd6ceb5f28545ab52"),
    }
    for name, (samples, sha256) in pinned.items():
        track = audio.decode(str(root / name), name)
        assert (len(track.pcm), track.sha256) == (samples, sha256)
