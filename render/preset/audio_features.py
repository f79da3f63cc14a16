"""Exact audio features: one value a frame, the same integers on every machine (docs/model.md,
section 14; docs/audio.md).

Input: the track as 16-bit mono PCM at RATE (render/preset/audio.py decodes, mixes and
resamples it in integers). Everything here is integer arithmetic on numpy int64 arrays (and
Python ints where a sum could pass 2^63); no float is rounded anywhere a result depends on it:

- the spectrum: windows of WINDOW samples every HOP samples (window h centred on sample
  h * HOP, zeros outside the track), a Hann window in Q15, a radix-2 FFT in integers whose
  twiddles are the exact unit circle of WINDOW steps at Q30 (summed in Decimal, rounded half to
  even, as kernels/exact.py sums the heading circle), each twiddle product rounded by one
  arithmetic shift; two real windows share one complex FFT (their spectra separated exactly as
  2 X); the magnitude of a bin is isqrt(re^2 + im^2), exact;
- loudness: the RMS of the frame's own samples, isqrt(sum of squares // count);
- bands: the sum of the bin magnitudes in each of BANDS, the largest over the frame's windows;
- onset: positive spectral flux, the sum over bins of max(0, c[h] - c[h - 1]) of the compressed
  magnitudes c = isqrt(256 * magnitude), the largest over the frame's windows;
- tempo: a given bpm, or the lag of the largest autocorrelation of the onset envelope (its
  mean removed, exact in Python ints) between MIN_BPM and MAX_BPM, refined by the parabola
  through its neighbours (exact fractions) and rounded to 1/100 bpm; the beats' phase: the
  offset (a whole window) whose beats gather the most onset strength, a beat earlier where that
  lies less than half a window before the track's start (a centred window hears a beat early);
- beat, bar: FULL on each frame that holds a beat (a bar's first beat: every BEATS_PER_BAR-th
  from the first), else 0.

Each feature is normalised over the track: divided by its 99th percentile (nearest rank) and
clipped, as an integer 0 .. FULL rounded half up (its largest value where the percentile is 0).
Smoothing (attack, release) is applied per key when a schedule follows a feature (smooth).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

from ..base import lazy

np = lazy.module("numpy")  # start-up: loaded at first use (base/lazy.py)

RATE = 22050  # samples per second of the analysed PCM
WINDOW = 2048  # samples of one spectrum (bins of RATE / WINDOW = 10.77 Hz)
HOP = 512  # samples between spectra (43.07 a second)
TWIDDLE_BITS = 30
WINDOW_BITS = 15
FULL = 1000  # a normalised feature's largest value (1 = FULL / FULL)
PERCENTILE = 99
MIN_BPM, MAX_BPM = 70, 180  # the detected tempo's range (one octave and a little)
BEATS_PER_BAR = 4
EARLY = Fraction(WINDOW // 2, RATE)  # a detected first beat may lie this much before 0 (the frame 0)
CHUNK = 512  # window pairs per FFT batch (bounds memory: 512 x 2048 complex int64)
# The bands, in Hz (lower edge included, upper excluded); brilliance ends at the analysed PCM's
# Nyquist frequency
BANDS = {
    "sub_bass": (20, 60),
    "bass": (60, 250),
    "low_mid": (250, 500),
    "mid": (500, 2000),
    "high_mid": (2000, 4000),
    "presence": (4000, 6000),
    "brilliance": (6000, RATE // 2 + 1),
}
# Every feature a schedule may follow, in the table's column order
FEATURES = ("loudness", *BANDS, "onset", "beat", "bar")
NEEDS_SOUND = ("loudness", *BANDS, "onset")  # the features of a track (beat and bar: of a tempo)


@lru_cache(maxsize=4)
def unit_circle(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) of 2 pi k / steps for k < steps at Q30, int64: the first octant summed in
    Decimal (60 digits, Taylor series) and rounded half to even, the rest by symmetry, so the
    table is the same on every platform."""
    octant = steps // 8
    first = []
    with localcontext() as context:
        context.prec, context.rounding = 60, ROUND_HALF_EVEN
        pi = Decimal("3.14159265358979323846264338327950288419716939937510582097494")
        scale = 1 << TWIDDLE_BITS
        for k in range(octant + 1):
            x = Decimal(k) * 2 * pi / Decimal(steps)
            cos, sin, term_c, term_s = Decimal(0), Decimal(0), Decimal(1), x
            for n in range(40):
                cos += term_c
                sin += term_s
                term_c = -term_c * x * x / ((2 * n + 1) * (2 * n + 2))
                term_s = -term_s * x * x / ((2 * n + 2) * (2 * n + 3))
            first.append(
                (
                    int((cos * scale).to_integral_value(ROUND_HALF_EVEN)),
                    int((sin * scale).to_integral_value(ROUND_HALF_EVEN)),
                )
            )
    cos, sin = [], []
    quarter = steps // 4
    for k in range(steps):
        quadrant, r = divmod(k, quarter)
        c, s = first[r] if r <= octant else first[quarter - r][::-1]
        for _ in range(quadrant):
            c, s = -s, c
        cos.append(c)
        sin.append(s)
    return np.array(cos, dtype=np.int64), np.array(sin, dtype=np.int64)


@lru_cache(maxsize=1)
def hann() -> np.ndarray:
    """The periodic Hann window of WINDOW samples in Q15: (1 - cos) / 2, rounded half up."""
    cos, _ = unit_circle(WINDOW)
    shift = TWIDDLE_BITS + 1 - WINDOW_BITS
    return ((1 << TWIDDLE_BITS) - cos + (1 << (shift - 1))) >> shift


@lru_cache(maxsize=1)
def _bit_reversal() -> np.ndarray:
    bits = WINDOW.bit_length() - 1
    index = np.arange(WINDOW)
    reversed_ = np.zeros(WINDOW, dtype=np.int64)
    for b in range(bits):
        reversed_ |= ((index >> b) & 1) << (bits - 1 - b)
    return reversed_


def fft(re: np.ndarray, im: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The DFT of [B, WINDOW] complex integers (re, im), in integers: radix-2 decimation in time,
    each twiddle product rounded by an arithmetic shift (floor of x + 2^29 over 2^30). Inputs of
    magnitude below 2^26 stay within int64 (|X| < 2^38, products below 2^62)."""
    order = _bit_reversal()
    re, im = re[:, order], im[:, order]
    cos, sin = unit_circle(WINDOW)
    half = 1 << (TWIDDLE_BITS - 1)
    batch, m = re.shape[0], 1
    while m < WINDOW:
        blocks = WINDOW // (2 * m)
        re, im = re.reshape(batch, blocks, 2, m), im.reshape(batch, blocks, 2, m)
        step = WINDOW // (2 * m)
        c, s = cos[: m * step : step], -sin[: m * step : step]  # e^(-2 pi i j / 2m)
        a, b = re[:, :, 1, :], im[:, :, 1, :]
        t_re = (a * c - b * s + half) >> TWIDDLE_BITS
        t_im = (a * s + b * c + half) >> TWIDDLE_BITS
        e_re, e_im = re[:, :, 0, :], im[:, :, 0, :]
        re = np.stack((e_re + t_re, e_re - t_re), axis=2).reshape(batch, WINDOW)
        im = np.stack((e_im + t_im, e_im - t_im), axis=2).reshape(batch, WINDOW)
        m *= 2
    return re, im


def isqrt(values: np.ndarray) -> np.ndarray:
    """floor(sqrt(v)) of non-negative int64 values below 2^62, exact: a float estimate corrected
    in integers. The estimate is within one of the root (v's float has a relative error of
    2^-53, so its root is off by less than 2^31 * 2^-52 = 2^-21), so one step each way makes it
    exact."""
    root = np.floor(np.sqrt(values.astype(np.float64))).astype(np.int64)
    root -= root * root > values
    root += (root + 1) * (root + 1) <= values
    return root


def windows(pcm: np.ndarray, start: int, count: int) -> np.ndarray:
    """[count, WINDOW] int64 Hann-windowed samples of windows start .. start + count (window h
    centred on sample h * HOP; zeros outside the track), in Q0: (x * w + 2^14) >> 15."""
    offsets = (np.arange(start, start + count) * HOP - WINDOW // 2)[:, None] + np.arange(WINDOW)[None, :]
    inside = (offsets >= 0) & (offsets < len(pcm))
    samples = np.where(inside, pcm[np.clip(offsets, 0, max(len(pcm) - 1, 0))], 0).astype(np.int64)
    return (samples * hann()[None, :] + (1 << (WINDOW_BITS - 1))) >> WINDOW_BITS


def magnitudes(pcm: np.ndarray) -> np.ndarray:
    """[H, WINDOW / 2 + 1] int64: 2 |X_h[k]| of every window h = 0 .. len // HOP (exact). Two
    windows go through one complex FFT (a as re, b as im): 2 A[k] = Z[k] + conj(Z[-k]) and
    2 B[k] = -i (Z[k] - conj(Z[-k])), exact in integers."""
    count = len(pcm) // HOP + 1
    bins = WINDOW // 2 + 1
    out = np.zeros((count, bins), dtype=np.int64)
    mirror = (-np.arange(bins)) % WINDOW
    for first in range(0, count, 2 * CHUNK):
        pairs = min(CHUNK, -(-(count - first) // 2))
        frames = windows(pcm, first, 2 * pairs).reshape(pairs, 2, WINDOW)
        z_re, z_im = fft(frames[:, 0, :], frames[:, 1, :])
        zr, zi = z_re[:, :bins], z_im[:, :bins]
        mr, mi = z_re[:, mirror], z_im[:, mirror]
        a_re, a_im = zr + mr, zi - mi  # 2 A
        b_re, b_im = zi + mi, mr - zr  # 2 B
        a, b = isqrt(a_re * a_re + a_im * a_im), isqrt(b_re * b_re + b_im * b_im)
        both = np.stack((a, b), axis=1).reshape(2 * pairs, bins)
        take = min(2 * pairs, count - first)
        out[first : first + take] = both[:take]
    return out


def band_bins(low: int, high: int) -> tuple[int, int]:
    """The bins [first, end) whose frequency k * RATE / WINDOW lies in [low, high) Hz."""
    return -(-low * WINDOW // RATE), min(WINDOW // 2 + 1, -(-high * WINDOW // RATE))


@dataclass(frozen=True)
class Frames:
    """The analysed span of each frame at `fps`: frame f covers samples [f RATE / fps,
    (f + 1) RATE / fps) (exact, floored to whole samples), and the windows h with h * HOP in
    that span (at least the first at or after its start)."""

    fps: int
    count: int

    def samples(self, f: int) -> tuple[int, int]:
        return f * RATE // self.fps, (f + 1) * RATE // self.fps

    def hops(self, windows_: int) -> np.ndarray:
        """[count, 2] (first window, end window) of each frame, clipped to the windows there are."""
        f = np.arange(self.count, dtype=np.int64)
        start, end = f * RATE // self.fps, (f + 1) * RATE // self.fps
        first = -(-start // HOP)
        last = np.maximum(first + 1, -(-end // HOP))
        return np.stack((np.minimum(first, windows_), np.minimum(last, windows_)), axis=1)


def frame_count(samples: int, fps: int) -> int:
    """The frames a track of `samples` fills at `fps`: ceil(samples * fps / RATE), at least 1."""
    return max(1, -(-samples * fps // RATE))


def per_frame_max(values: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """[F] the largest of values[first:end] for each frame's span (0 where it is empty)."""
    out = np.zeros(len(spans), dtype=np.int64)
    for f, (first, end) in enumerate(spans):
        if end > first:
            out[f] = values[first:end].max()
    return out


def loudness(pcm: np.ndarray, frames: Frames) -> np.ndarray:
    """[F] the RMS of each frame's samples: isqrt(sum of squares // count) (0 past the track)."""
    squares = np.concatenate(([0], np.cumsum(pcm.astype(np.int64) ** 2)))
    out = np.zeros(frames.count, dtype=np.int64)
    for f in range(frames.count):
        lo, hi = frames.samples(f)
        lo, hi = min(lo, len(pcm)), min(hi, len(pcm))
        if hi > lo:
            out[f] = (squares[hi] - squares[lo]) // (hi - lo)
    return isqrt(out)


def onset_envelope(mags: np.ndarray) -> np.ndarray:
    """[H] positive spectral flux of the compressed magnitudes isqrt(256 m), window by window
    (the first window's flux from silence)."""
    compressed = isqrt(mags << 8)
    previous = np.vstack((np.zeros((1, mags.shape[1]), dtype=np.int64), compressed[:-1]))
    return np.maximum(compressed - previous, 0).sum(axis=1)


def normalised(values: np.ndarray) -> np.ndarray:
    """[F] int64 0 .. FULL: values / their PERCENTILE-th percentile (nearest rank), rounded half
    up, clipped at FULL; over the largest value where the percentile is 0; zeros for zeros."""
    ordered = np.sort(values)
    rank = max(1, -(-PERCENTILE * len(values) // 100))
    reference = int(ordered[rank - 1]) or int(ordered[-1])
    if reference == 0:
        return np.zeros(len(values), dtype=np.int64)
    scaled = (2 * values.astype(object) * FULL + reference) // (2 * reference)  # exact: Python ints
    return np.minimum(scaled.astype(np.int64), FULL)


def detect_tempo(onset: np.ndarray) -> Fraction | None:
    """The tempo (bpm, a multiple of 1/100) of an onset envelope: the lag L in [MIN_BPM,
    MAX_BPM]'s range of the largest autocorrelation sum (o[h] - mean)(o[h + L] - mean) (exact,
    scaled by the count; ties: the shorter lag), refined by the vertex of the parabola through
    L - 1, L, L + 1. None where the envelope is flat (no onsets to follow)."""
    n = len(onset)
    total = int(onset.sum())
    centred = [int(o) * n - total for o in onset]
    low = 60 * RATE // (HOP * MAX_BPM)  # the shortest lag considered, less one for the parabola
    high = -(-60 * RATE // (HOP * MIN_BPM)) + 1
    if n <= high + 1 or not any(centred):
        return None
    score = {lag: sum(a * b for a, b in zip(centred, centred[lag:])) for lag in range(low, high + 1)}
    inside = [lag for lag in range(low + 1, high) if MIN_BPM <= Fraction(60 * RATE, HOP * lag) <= MAX_BPM]
    best = max(inside, key=lambda lag: (score[lag], -lag))
    if score[best] <= 0:
        return None
    before, at, after = score[best - 1], score[best], score[best + 1]
    curve = before - 2 * at + after
    shift = Fraction(before - after, 2 * curve) if curve < 0 else Fraction(0)
    lag = best + max(Fraction(-1, 2), min(Fraction(1, 2), shift))
    return Fraction(round(Fraction(60 * RATE, HOP) / lag * 100), 100)


def beat_phase(onset: np.ndarray, period: Fraction) -> int:
    """The window (0 .. ceil(period) - 1) of the first beat: the one whose beats, every `period`
    windows (rounded half to even), gather the most onset strength (ties: the earliest)."""
    best, best_score = 0, -1
    n = len(onset)
    for phase in range(max(1, -(-period.numerator // period.denominator))):
        at, k, score = phase, 0, 0
        while at < n:
            score += int(onset[at])
            k += 1
            at = round(phase + k * period)
        if score > best_score:
            best, best_score = phase, score
    return best


def beat_frames(frames: Frames, bpm: Fraction, offset: Fraction, seconds: Fraction | None) -> np.ndarray:
    """[F, 2] int64 (beat, bar): FULL where a beat (a bar's first beat) falls in the frame's time
    [f / fps, (f + 1) / fps), else 0. Beats at offset + k * 60 / bpm seconds, k >= 0 (and
    within `seconds`, the track's length, where there is a track)."""
    out = np.zeros((frames.count, 2), dtype=np.int64)
    period = Fraction(60) / bpm
    k = 0
    while True:
        at = offset + k * period
        if seconds is not None and at >= seconds:
            break
        f = max(0, math.floor(at * frames.fps))  # the frame whose time holds the beat (0: before it)
        if f >= frames.count:
            break
        out[f, 0] = FULL
        if k % BEATS_PER_BAR == 0:
            out[f, 1] = FULL
        k += 1
    return out


@dataclass(frozen=True)
class Analysis:
    """A track's features at one fps: `table` [F, len(FEATURES)] int64 0 .. FULL (normalised,
    not smoothed), the tempo (bpm, None without one), the first beat (seconds), and the PCM's
    sha256 and length in samples (0 without a track)."""

    fps: int
    table: np.ndarray
    bpm: Fraction | None
    offset: Fraction
    pcm_sha256: str | None
    samples: int

    @property
    def frames(self) -> int:
        return len(self.table)

    def column(self, feature: str) -> np.ndarray:
        return self.table[:, FEATURES.index(feature)]


def analyse(
    pcm: np.ndarray, fps: int, bpm: Fraction | None = None, offset: Fraction | None = None
) -> Analysis:
    """Every feature of a track of 16-bit mono PCM at RATE, one value a frame at `fps` for the
    frames the track fills (frame_count). `bpm`: the tempo (None: detected); `offset`: the first
    beat in seconds (None: detected)."""
    pcm = np.asarray(pcm, dtype=np.int64)
    frames = Frames(fps, frame_count(len(pcm), fps))
    mags = magnitudes(pcm)
    spans = frames.hops(len(mags))
    columns = [normalised(loudness(pcm, frames))]
    for low, high in BANDS.values():
        first, end = band_bins(low, high)
        columns.append(normalised(per_frame_max(mags[:, first:end].sum(axis=1), spans)))
    onset = onset_envelope(mags)
    columns.append(normalised(per_frame_max(onset, spans)))
    tempo = bpm if bpm is not None else detect_tempo(onset)
    seconds = Fraction(len(pcm), RATE)
    if tempo is None:
        columns.extend([np.zeros(frames.count, dtype=np.int64)] * 2)
        start = Fraction(0)
    else:
        if offset is None:
            start = Fraction(beat_phase(onset, Fraction(60 * RATE, HOP) / tempo) * HOP, RATE)
            if start - 60 / tempo >= -EARLY:  # a beat the centred windows heard just before 0
                start -= 60 / tempo
        else:
            start = offset
        beats = beat_frames(frames, tempo, start, seconds)
        columns.extend([beats[:, 0], beats[:, 1]])
    digest = hashlib.sha256(pcm.astype("<i2").tobytes()).hexdigest()
    return Analysis(fps, np.stack(columns, axis=1), tempo, start, digest, len(pcm))


def tempo_only(frames: int, fps: int, bpm: Fraction, offset: Fraction) -> Analysis:
    """The features of a tempo without a track (audio: {bpm: ...}): beat and bar only."""
    table = np.zeros((frames, len(FEATURES)), dtype=np.int64)
    beats = beat_frames(Frames(fps, frames), bpm, offset, None)
    table[:, FEATURES.index("beat")] = beats[:, 0]
    table[:, FEATURES.index("bar")] = beats[:, 1]
    return Analysis(fps, table, bpm, offset, None, 0)


def smooth(values: np.ndarray, fps: int, attack_ms: Fraction, release_ms: Fraction) -> list[Fraction]:
    """A one-pole follower of values (0 .. FULL) a frame, exact: y += (x - y) * a with
    a = dt / (tau + dt), dt = 1000 / fps ms (the backward Euler step of dy/dt = (x - y) / tau),
    tau the attack where x > y, else the release; y starts at the first value. Fractions of FULL."""
    dt = Fraction(1000, fps)
    rise, fall = dt / (attack_ms + dt), dt / (release_ms + dt)
    out, y = [], None
    for x in values.tolist():
        if y is None:
            y = Fraction(x)
        else:
            y += (x - y) * (rise if x > y else fall)
            y = Fraction(round(y * 65536), 65536)  # kept at 1/65536 of a step: exact and short
        out.append(y / FULL)
    return out
