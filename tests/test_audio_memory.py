"""An audio track's analysis in bounded memory (render/preset/audio_features.py, issue 36): the
track streams through the analysis a batch of windows at a time, and the values are those of the
whole track at once, however the track is cut into blocks and batches; the memory it allocates
grows by a few integers a window, not by a window's spectrum."""

from __future__ import annotations

import hashlib
import tracemalloc
import wave
from fractions import Fraction

import numpy as np
import pytest

from physarum.render.preset import audio
from physarum.render.preset import audio_features as af

RATE, HOP, WINDOW = af.RATE, af.HOP, af.WINDOW


def track(samples: int, seed: int = 11) -> np.ndarray:
    """int16: a burst every 0.47 s (128 bpm) over noise and a 70 Hz hum, `samples` long."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples)
    pcm = rng.integers(-1500, 1500, size=samples) + np.round(3000 * np.sin(2 * np.pi * 70 * t / RATE))
    burst = np.round(20000 * np.exp(-np.arange(400) / 60) * np.sin(np.arange(400) * 0.9))
    for start in range(int(0.2 * RATE), samples - 400, int(60 / 128 * RATE)):
        pcm[start : start + 400] += burst
    return np.clip(pcm, -32768, 32767).astype(np.int16)


def whole_track(pcm: np.ndarray, fps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(loudness [F], band sums [H, bands], onset flux [H]) of the track at once: the whole
    spectrogram and the whole track's running sum of squares, as the analysis was before it
    streamed."""
    mags = af.magnitudes(pcm.astype(np.int64))
    bands = np.stack(
        [mags[:, slice(*af.band_bins(*edges))].sum(axis=1) for edges in af.BANDS.values()], axis=1
    )
    compressed = af.isqrt(mags << 8)
    previous = np.vstack((np.zeros((1, mags.shape[1]), dtype=np.int64), compressed[:-1]))
    onset = np.maximum(compressed - previous, 0).sum(axis=1)
    squares = np.concatenate(([0], np.cumsum(pcm.astype(np.int64) ** 2)))
    frames = af.Frames(fps, af.frame_count(len(pcm), fps))
    mean = np.zeros(frames.count, dtype=np.int64)
    for f in range(frames.count):
        lo, hi = (min(s, len(pcm)) for s in frames.samples(f))
        if hi > lo:
            mean[f] = (squares[hi] - squares[lo]) // (hi - lo)
    return af.isqrt(mean), bands, onset


def pushed(pcm: np.ndarray, fps: int, pairs: int, blocks: list[int]) -> af.Analyser:
    """An Analyser given the track in blocks of the sizes `blocks` (cycled), `pairs` a batch."""
    analyser, at, k = af.Analyser(fps, pairs), 0, 0
    while at < len(pcm):
        analyser.push(pcm[at : at + blocks[k % len(blocks)]])
        at, k = at + blocks[k % len(blocks)], k + 1
    return analyser


# batches of 2 * 3 windows (3072 samples) end at multiples of 3072 past the first window's start;
# these lengths end just before, on and after such ends, mid-window and mid-hop
LENGTHS = [1, 511, 1023, 2049, 3 * 3072 - 1, 5 * 3072 + 1, 7 * 3072 + HOP + 7, 2 * RATE + 333]
BLOCKS = [[1, 4095], [777], [5000, 13, 2048, 3071], [1 << 20]]


@pytest.mark.parametrize("samples", LENGTHS)
@pytest.mark.parametrize("fps", [1, 24, 30, 100])
def test_streamed_windows_and_frames_are_the_whole_tracks(samples, fps):
    pcm = track(samples)
    loudness, bands, onset = whole_track(pcm, fps)
    for blocks in BLOCKS:
        analyser = pushed(pcm, fps, 3, blocks)
        streamed_bands, streamed_onset = analyser.spectrum.finish(samples)
        assert np.array_equal(streamed_bands, bands), (blocks, samples)
        assert np.array_equal(streamed_onset, onset), (blocks, samples)
        assert np.array_equal(analyser.loudness.finish(samples), loudness), (blocks, samples)


@pytest.mark.parametrize("fps", [7, 24, 100])
def test_the_table_does_not_depend_on_the_batch_or_the_blocks(fps):
    pcm = track(6 * RATE + 1234)
    whole = af.analyse(pcm, fps, pairs=len(pcm) // HOP)  # one batch: every window at once
    assert whole.bpm is not None and whole.table[:, 1:9].max() == af.FULL
    for analysis in (
        af.analyse(pcm, fps, pairs=1),
        af.analyse(pcm.astype(np.int64), fps, pairs=5),
        pushed(pcm, fps, 2, [4097, 1, 333]).result(),
    ):
        assert np.array_equal(analysis.table, whole.table)
        assert (analysis.bpm, analysis.offset, analysis.samples) == (whole.bpm, whole.offset, whole.samples)
        assert (
            analysis.pcm_sha256 == whole.pcm_sha256 == hashlib.sha256(pcm.astype("<i2").tobytes()).hexdigest()
        )


# The tables of track(10 * RATE + 4321) as the whole-track analysis gave them before the
# analysis streamed (sha256 of the table as little-endian 16-bit, the bpm, the first beat)
PINNED = {
    7: ("4d1de1b9a678a5c300a2c3422c10092e1d4134fd45d96218bce0d7e86f48bfbf", "3211/25", "256/1225"),
    30: ("3f72ba5a8c2ebc440e384b3c2f145bcd7a8274a6cb99c354e388e16263c6c1cd", "3211/25", "256/1225"),
    100: ("050836d7cec94301586598b0ce33c577dd042c2bd4d6ed051938930ee706d664", "3211/25", "256/1225"),
}


@pytest.mark.parametrize("fps", sorted(PINNED))
@pytest.mark.parametrize("pairs", [1, 4, af.CHUNK])
def test_the_streamed_tables_are_the_whole_track_analysis_pinned(fps, pairs):
    analysis = af.analyse(track(10 * RATE + 4321), fps, pairs=pairs)
    digest = hashlib.sha256(analysis.table.astype("<i2").tobytes()).hexdigest()
    assert (digest, str(analysis.bpm), str(analysis.offset)) == PINNED[fps]


def test_an_empty_or_one_sample_track_streams():
    empty = af.analyse(np.zeros(0, dtype=np.int16), 30)
    assert empty.table.shape == (1, len(af.FEATURES)) and not empty.table.any() and empty.bpm is None
    one = af.analyse(np.array([1000], dtype=np.int16), 30)
    assert one.table.shape == (1, len(af.FEATURES)) and one.column("loudness")[0] == af.FULL


def traced_peak(pcm: np.ndarray, pairs: int) -> int:
    """The most bytes Python and numpy held at once during analyse (the track itself excluded)."""
    af.analyse(pcm[: 4 * RATE], 30, pairs=pairs)  # the cached tables (unit circle, Hann) first
    tracemalloc.start()
    try:
        af.analyse(pcm, 30, pairs=pairs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_grows_by_a_few_integers_a_window_not_a_spectrum():
    pcm = track(40 * RATE)
    short, long = traced_peak(pcm[: 10 * RATE], 8), traced_peak(pcm, 8)
    more_windows = (len(pcm) - 10 * RATE) // HOP
    # the whole spectrogram alone grew by a row of WINDOW / 2 + 1 int64 (8200 bytes) a window
    # (the whole-track analysis: 36 KB a window all told); a window's band sums and flux: 64
    assert long - short < 1024 * more_windows, (short, long)
    assert long < 4 << 20  # bytes: a batch of 16 windows and the track's few integers a window


@pytest.mark.slow
def test_a_twenty_minute_track_is_analysed_in_megabytes():
    pcm = np.resize(track(30 * RATE), 20 * 60 * RATE)  # the longest track (audio.MAX_SECONDS)
    peak = traced_peak(pcm, af.CHUNK)
    # the whole-track analysis held 2.3 GB here (its spectrogram alone 0.42 GB)
    assert peak < 48 << 20, peak


def write_wav(path, pcm: np.ndarray, rate: int) -> str:
    """A 16-bit stereo WAV of `pcm` at `rate`, the same samples on both channels."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(np.repeat(pcm, 2).astype("<i2").tobytes())
    return str(path)


def test_a_sound_file_decodes_straight_into_the_analysis(tmp_path):
    path = write_wav(tmp_path / "clicks.wav", track(2 * 44100 + 4321), 44100)  # 4.1 s at 44.1 kHz
    kept = audio.decode(path, "clicks.wav")
    analyser = af.Analyser(24, 3)
    streamed = audio.decode(path, "clicks.wav", analyser)
    assert streamed.pcm is None and (streamed.sha256, streamed.samples) == (kept.sha256, len(kept.pcm))
    for bpm in (None, Fraction(100)):  # one analyser, asked for the detected and a given tempo
        whole, analysis = af.analyse(kept.pcm, 24, bpm), analyser.result(bpm)
        assert np.array_equal(analysis.table, whole.table) and analysis.pcm_sha256 == kept.sha256
        assert (analysis.bpm, analysis.offset) == (whole.bpm, whole.offset)


def test_decoding_into_the_analysis_holds_no_track(tmp_path):
    def peak(seconds: int) -> int:
        path = write_wav(tmp_path / f"{seconds}.wav", track(seconds * RATE), RATE)
        audio.decode(path, "warm-up", af.Analyser(30))
        tracemalloc.start()
        try:
            audio.decode(path, f"{seconds}.wav", af.Analyser(30))
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    short, long = peak(10), peak(40)
    # the PCM kept would be 2 bytes a sample: 1024 bytes a window (HOP samples)
    assert long - short < 512 * (30 * RATE // HOP), (short, long)
