"""Exact audio features (render/preset/audio_features.py): the integer FFT against numpy's, a sine
at a band's centre lights that band, a click track's tempo and beats, the normalisation and the
smoothing, and the same integers on every run."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from physarum.render.preset import audio_features as af

RATE = af.RATE


def sine(hz: float, seconds: float, amplitude: int = 12000) -> np.ndarray:
    t = np.arange(int(RATE * seconds))
    return np.round(amplitude * np.sin(2 * np.pi * hz * t / RATE)).astype(np.int16)


def clicks(bpm: float, seconds: float, first: float = 0.25) -> np.ndarray:
    """A click track: a short decaying burst every beat from `first` seconds on."""
    pcm = np.zeros(int(RATE * seconds), dtype=np.int64)
    burst = np.round(20000 * np.exp(-np.arange(300) / 50) * np.sin(np.arange(300) * 1.3)).astype(np.int64)
    at = first
    while at * RATE + 300 < len(pcm):
        start = int(round(at * RATE))
        pcm[start : start + 300] += burst
        at += 60 / bpm
    return pcm.astype(np.int16)


def test_the_integer_fft_is_the_dft():
    rng = np.random.default_rng(7)
    re = rng.integers(-32768, 32768, size=(3, af.WINDOW)).astype(np.int64)
    im = rng.integers(-32768, 32768, size=(3, af.WINDOW)).astype(np.int64)
    out_re, out_im = af.fft(re, im)
    exact = np.fft.fft(re + 1j * im, axis=1)
    # each of the 11 stages rounds its twiddle products once: the error stays a few units in 2^26
    assert np.abs(out_re - exact.real).max() < 64 and np.abs(out_im - exact.imag).max() < 64
    assert out_re.dtype == np.int64


def textbook_fft(re: np.ndarray, im: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The integer FFT as it was first written (and pinned): the input bit-reversed, then one
    stage of butterflies per size in place, each stage's halves stacked into a new array."""
    bits = af.WINDOW.bit_length() - 1
    index = np.arange(af.WINDOW)
    order = sum(((index >> b) & 1) << (bits - 1 - b) for b in range(bits))
    re, im = re[:, order], im[:, order]
    cos, sin = af.unit_circle(af.WINDOW)
    half = 1 << (af.TWIDDLE_BITS - 1)
    batch, m = re.shape[0], 1
    while m < af.WINDOW:
        blocks = af.WINDOW // (2 * m)
        re, im = re.reshape(batch, blocks, 2, m), im.reshape(batch, blocks, 2, m)
        step = af.WINDOW // (2 * m)
        c, s = cos[: m * step : step], -sin[: m * step : step]
        a, b = re[:, :, 1, :], im[:, :, 1, :]
        t_re = (a * c - b * s + half) >> af.TWIDDLE_BITS
        t_im = (a * s + b * c + half) >> af.TWIDDLE_BITS
        e_re, e_im = re[:, :, 0, :], im[:, :, 0, :]
        re = np.stack((e_re + t_re, e_re - t_re), axis=2).reshape(batch, af.WINDOW)
        im = np.stack((e_im + t_im, e_im - t_im), axis=2).reshape(batch, af.WINDOW)
        m *= 2
    return re, im


def test_the_fft_is_the_textbook_fft_bit_for_bit():
    """Every batch a Spectrum makes (1 to CHUNK pairs; more in a one-batch analysis), random
    windows over the whole 16-bit range, full-scale rows, and inputs up to the contract's 2^26."""
    rng = np.random.default_rng(36)
    earlier = None
    for batch in [*range(1, af.CHUNK + 1), 2 * af.CHUNK + 1, 200]:
        re = rng.integers(-32768, 32769, size=(batch, af.WINDOW))
        im = rng.integers(-32768, 32769, size=(batch, af.WINDOW))
        re[0], im[-1] = 32768, -32768  # the loudest windows
        if batch in (3, af.CHUNK):
            re[1:] = rng.integers(-(1 << 26) + 1, 1 << 26, size=(batch - 1, af.WINDOW))
        fast, slow = af.fft(re, im), textbook_fft(re, im)
        assert all(np.array_equal(f, s) for f, s in zip(fast, slow)), batch
        if earlier is not None:  # a result is the caller's: the next call leaves it alone
            assert all(np.array_equal(e, s) for e, s in zip(earlier[0], earlier[1]))
        earlier = fast, textbook_fft(re, im)


def test_the_fft_on_another_thread_is_the_same():
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(37)
    re, im = (rng.integers(-32768, 32769, size=(af.CHUNK, af.WINDOW)) for _ in range(2))
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: af.fft(re, im), range(4)))
    slow = textbook_fft(re, im)
    assert all(np.array_equal(r[0], slow[0]) and np.array_equal(r[1], slow[1]) for r in results)


def test_two_real_windows_share_one_fft():
    pcm = sine(440, 0.5).astype(np.int64)
    mags = af.magnitudes(pcm)
    for h in (3, 4, 5):  # windows of both parities of a pair
        window = af.windows(pcm, h, 1)[0]
        re, im = af.fft(window[None, :], np.zeros((1, af.WINDOW), dtype=np.int64))
        alone = af.isqrt((2 * re[0, : af.WINDOW // 2 + 1]) ** 2 + (2 * im[0, : af.WINDOW // 2 + 1]) ** 2)
        # each window's own FFT rounds other products: the same spectrum within rounding
        assert np.abs(mags[h] - alone).max() <= 64 and alone.max() > 10**6


def test_isqrt_is_exact():
    values = np.array([0, 1, 2, 3, 4, 15, 16, 17, (1 << 52) + 1, (1 << 61) - 1, 10**18], dtype=np.int64)
    import math

    assert af.isqrt(values).tolist() == [math.isqrt(int(v)) for v in values]


def test_the_twiddles_are_the_exact_circle():
    cos, sin = af.unit_circle(af.WINDOW)
    assert cos[0] == 1 << 30 and sin[0] == 0 and sin[af.WINDOW // 4] == 1 << 30
    assert cos[af.WINDOW // 2] == -(1 << 30)
    assert np.abs(cos - np.round(np.cos(2 * np.pi * np.arange(af.WINDOW) / af.WINDOW) * 2**30)).max() <= 1


@pytest.mark.parametrize("band", list(af.BANDS))
def test_a_sine_at_a_bands_centre_lights_that_band(band):
    low, high = af.BANDS[band]
    centre = (low * high) ** 0.5 if band != "brilliance" else 8000
    pcm = sine(centre, 1.0)
    mags = af.magnitudes(pcm.astype(np.int64))
    energy = {name: int(mags[10:30, slice(*af.band_bins(*edges))].sum()) for name, edges in af.BANDS.items()}
    assert max(energy, key=energy.get) == band


def test_a_click_track_gives_its_tempo_and_beats():
    pcm = clicks(120, 12.0)
    analysis = af.analyse(pcm, 30)
    assert abs(analysis.bpm - 120) <= 1
    beats = np.flatnonzero(analysis.column("beat"))
    # a beat every 15 frames at 30 fps, the first at the first click (0.25 s: frame 7)
    assert abs(int(beats[0]) - 7) <= 1
    assert set(np.diff(beats).tolist()) <= {14, 15, 16}
    bars = np.flatnonzero(analysis.column("bar"))
    assert np.array_equal(bars, beats[::4])


@pytest.mark.parametrize("bpm", [90, 140, 174])
def test_detected_tempi_across_the_range(bpm):
    analysis = af.analyse(clicks(bpm, 12.0), 30)
    assert abs(analysis.bpm - bpm) <= 1.5


def test_a_given_tempo_is_kept_and_the_onsets_follow_the_clicks():
    pcm = clicks(100, 6.0)
    analysis = af.analyse(pcm, 25, bpm=Fraction(100))
    assert analysis.bpm == 100
    onset = analysis.column("onset")
    loud = np.flatnonzero(onset >= af.FULL // 2)
    click_frames = {int((0.25 + k * 0.6) * 25) for k in range(10)}
    # a centred window hears a click up to half a window (46 ms) early: its frame or the one before
    near = click_frames | {f - 1 for f in click_frames} | {f + 1 for f in click_frames}
    assert set(loud.tolist()) <= near and len(loud) >= 9


def test_loudness_is_the_rms_of_each_frame():
    pcm = np.concatenate((sine(440, 1.0, 3000), sine(440, 1.0, 12000))).astype(np.int64)
    frames = af.Frames(10, af.frame_count(len(pcm), 10))
    meter = af.Loudness(10)
    meter.push(pcm)
    rms = meter.finish(len(pcm))
    lo, hi = frames.samples(3)
    expected = int(np.sqrt((pcm[lo:hi] ** 2).sum() // (hi - lo)))
    assert rms[3] == expected
    assert 3.9 < rms[15] / rms[3] < 4.1


def test_normalised_by_the_99th_percentile():
    values = np.arange(1, 201, dtype=np.int64)  # the 99th percentile (nearest rank) is 198
    out = af.normalised(values)
    assert out[197] == af.FULL and out[199] == af.FULL
    assert out[98] == (2 * 99 * af.FULL + 198) // (2 * 198)
    assert af.normalised(np.zeros(5, dtype=np.int64)).tolist() == [0] * 5


def test_smoothing_attack_and_release():
    values = np.array([0, 1000, 1000, 0, 0, 0], dtype=np.int64)
    instant = af.smooth(values, 10, Fraction(0), Fraction(0))
    assert instant == [0, 1, 1, 0, 0, 0]
    slow = af.smooth(values, 10, Fraction(0), Fraction(100))  # release: dt / (tau + dt) = 1/2
    assert slow[:4] == [0, 1, 1, Fraction(1, 2)] and slow[5] == Fraction(1, 8)


def test_the_features_are_the_same_integers_every_time():
    rng = np.random.default_rng(3)
    pcm = (clicks(128, 4.0).astype(np.int64) + rng.integers(-2000, 2000, size=int(RATE * 4.0))).astype(
        np.int16
    )
    first, second = af.analyse(pcm, 24), af.analyse(pcm.copy(), 24)
    assert np.array_equal(first.table, second.table) and first.bpm == second.bpm
    assert first.table.shape == (af.frame_count(len(pcm), 24), len(af.FEATURES))
    assert first.table.min() >= 0 and first.table.max() <= af.FULL
    # pinned: the features of this track (a change to the analysis changes this digest)
    import hashlib

    digest = hashlib.sha256(first.table.astype("<i2").tobytes()).hexdigest()
    assert digest == PINNED_TABLE, digest


PINNED_TABLE = "e309366059cc28cf028ad5525a18f22ad9794e40f4899fe45c53304eddc5b9b0"
