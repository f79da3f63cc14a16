"""Exact audio features: one value a frame, the same integers on every machine (docs/model.md,
section 15; docs/audio.md).

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

The track streams through the analysis (Analyser: the samples pushed block by block, analysed a
batch of CHUNK window pairs at a time, the overlap of the windows and the last window's spectrum
carried to the next batch): memory is bounded by a batch and a few integers a window and a frame,
never the spectrogram, and the values are those of the whole track at once (magnitudes).
"""

from __future__ import annotations

import hashlib
import math
import threading
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
# Window pairs per FFT batch: the analysis streams over the track a batch at a time (Analyser),
# so its memory is a batch's (64 windows: about 1 MB an array), not the track's. On the shared
# 2-core CPU a 10-minute track took the same CPU time (3.8 to 4.1 s) with 16 to 128 pairs and
# more with 512 (the old whole-track batch size: arrays past the caches)
CHUNK = 32
# The FFT's stages below this size keep each sub-transform in a row (Stockham), the rest run in
# place, so that every array operation runs along at least this many contiguous integers (at
# least 4: sizes 2 and 4 are the exact stages). A batch of 32 pairs on the shared 2-core CPU:
# 2.4 ms at 32 and 64, 2.5 at 16 and 128, 3.3 at 4, 4.3 all in place, 4.4 all Stockham (5.5:
# the in-place form with a copy a stage, before; benchmarks/unreleased/animation.txt)
FFT_SPLIT = 64
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
def _input_order() -> np.ndarray:
    """The FFT's input permutation: index c's low log2(WINDOW / FFT_SPLIT) bits reversed, its
    high bits kept, so that after the Stockham stages column b holds the sub-transforms of the
    residue bit-reversed(b) (the order the in-place stages take them in)."""
    bits = (WINDOW // FFT_SPLIT).bit_length() - 1
    index = np.arange(WINDOW)
    low = index & ((1 << bits) - 1)
    reversed_ = np.zeros(WINDOW, dtype=np.int64)
    for b in range(bits):
        reversed_ |= ((low >> b) & 1) << (bits - 1 - b)
    return index - low + reversed_


@lru_cache(maxsize=2 * 11)
def _twiddles(m: int, repeat: int) -> tuple[np.ndarray, np.ndarray]:
    """(cos, -sin) of e^(-2 pi i j / 2m), j < m, at Q30: [m], or [m, repeat] each repeated
    along a row (the Stockham stages: a contiguous operand multiplies faster than a broadcast)."""
    cos, sin = unit_circle(WINDOW)
    step = WINDOW // (2 * m)
    c, s = cos[: m * step : step], -sin[: m * step : step]
    if repeat:
        c, s = np.repeat(c, repeat).reshape(m, repeat), np.repeat(s, repeat).reshape(m, repeat)
    return c, s


_FFT_BUFFERS = threading.local()  # each thread's FFT work arrays, kept between batches


def _fft_buffers(batch: int) -> tuple[np.ndarray, ...]:
    """The FFT's work arrays for `batch` pairs: two [batch, WINDOW] (re, im) pairs and three
    [batch, WINDOW / 2] products. Up to CHUNK pairs they are this thread's, kept while the batch
    size stays (fresh arrays each batch cost the page faults of 2.75 MB: 0.5 of 2.9 ms a batch
    of 32 pairs); a larger batch's are its own, not kept."""
    held = getattr(_FFT_BUFFERS, "arrays", None)
    if held is None or held[0].shape[0] != batch:
        full = [np.empty((batch, WINDOW), dtype=np.int64) for _ in range(4)]
        held = (*full, *(np.empty((batch, WINDOW // 2), dtype=np.int64) for _ in range(3)))
        if batch <= CHUNK:
            _FFT_BUFFERS.arrays = held
    return held


def _rotate(a, b, c, s, t_re, t_im, scratch) -> None:
    """(t_re, t_im) = (a + ib)(c + is), each part rounded by one arithmetic shift of TWIDDLE_BITS."""
    half = 1 << (TWIDDLE_BITS - 1)
    np.multiply(a, c, out=t_re)
    np.multiply(b, s, out=scratch)
    t_re -= scratch
    t_re += half
    t_re >>= TWIDDLE_BITS
    np.multiply(a, s, out=t_im)
    np.multiply(b, c, out=scratch)
    t_im += scratch
    t_im += half
    t_im >>= TWIDDLE_BITS


def _butterfly(even, odd, low, high) -> None:
    """low = even + odd, high = even - odd, of (re, im) pairs."""
    for e, o, lo, hi in zip(even, odd, low, high):
        np.add(e, o, out=lo)
        np.subtract(e, o, out=hi)


def _halves(x, y, batch: int, m: int):
    """(even, odd) sub-transforms of size m in x and (low, high) halves of the size-2m ones in y,
    [batch, m, WINDOW / 2m] views in the Stockham layout (m < FFT_SPLIT; the last such stage
    writes y transposed, the in-place layout), [batch, WINDOW / 2m, m] views in place."""
    rows = WINDOW // (2 * m)
    if m < FFT_SPLIT:
        x = x.reshape(batch, m, 2, rows)
        if 2 * m == FFT_SPLIT:
            y = y.reshape(batch, rows, 2, m).transpose(0, 2, 3, 1)
        else:
            y = y.reshape(batch, 2, m, rows)
        return x[:, :, 0], x[:, :, 1], y[:, 0], y[:, 1]
    x, y = x.reshape(batch, rows, 2, m), y.reshape(batch, rows, 2, m)
    return x[:, :, 0], x[:, :, 1], y[:, :, 0], y[:, :, 1]


def fft(re: np.ndarray, im: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The DFT of [B, WINDOW] complex integers (re, im), in integers: radix-2 decimation in time,
    each twiddle product rounded by an arithmetic shift (floor of x + 2^29 over 2^30). Inputs of
    magnitude below 2^26 stay within int64 (|X| < 2^38, products below 2^62).

    The integers are those of the textbook in-place form (bit-reversed input, a stage of
    butterflies per size; tests/test_audio_features.py holds it and compares): every size-2m
    transform is the same sum of the same rounded products; only where they lie in memory
    differs. Stages below FFT_SPLIT keep each sub-transform's values in a row (Stockham), the
    rest in place, so each array operation runs along at least FFT_SPLIT contiguous integers;
    the sizes 2 and 4 multiply by 1 and -i only (exact: added, not multiplied)."""
    batch = re.shape[0]
    x_re, x_im, y_re, y_im, t_re, t_im, scratch = _fft_buffers(batch)
    np.take(re, _input_order(), axis=1, out=x_re)
    np.take(im, _input_order(), axis=1, out=x_im)
    m = 1
    while m < WINDOW:
        if 2 * m == WINDOW:  # the result: fresh arrays, the caller's
            y_re, y_im = np.empty_like(x_re), np.empty_like(x_im)
        e_re, o_re, lo_re, hi_re = _halves(x_re, y_re, batch, m)
        e_im, o_im, lo_im, hi_im = _halves(x_im, y_im, batch, m)
        if m == 1:  # the twiddle e^0 = 1
            _butterfly((e_re, e_im), (o_re, o_im), (lo_re, lo_im), (hi_re, hi_im))
        elif m == 2:  # row 0: e^0 = 1; row 1: -i, and (a + ib)(-i) = b - ia
            first = slice(0, 1)
            _butterfly(
                (e_re[:, first], e_im[:, first]),
                (o_re[:, first], o_im[:, first]),
                (lo_re[:, first], lo_im[:, first]),
                (hi_re[:, first], hi_im[:, first]),
            )
            _butterfly(
                (e_re[:, 1], e_im[:, 1]),
                (o_im[:, 1], o_re[:, 1]),
                (lo_re[:, 1], hi_im[:, 1]),
                (hi_re[:, 1], lo_im[:, 1]),
            )
        else:
            c, s = _twiddles(m, WINDOW // (2 * m) if m < FFT_SPLIT else 0)
            shape = o_re.shape
            t = t_re.reshape(shape), t_im.reshape(shape)
            _rotate(o_re, o_im, c, s, *t, scratch.reshape(shape))
            _butterfly((e_re, e_im), t, (lo_re, lo_im), (hi_re, hi_im))
        x_re, y_re, x_im, y_im = y_re, x_re, y_im, x_im
        m *= 2
    return x_re, x_im


def isqrt(values: np.ndarray) -> np.ndarray:
    """floor(sqrt(v)) of non-negative int64 values below 2^62, exact: a float estimate corrected
    in integers. The estimate is within one of the root (v's float has a relative error of
    2^-53, so its root is off by less than 2^31 * 2^-52 = 2^-21), so one step each way makes it
    exact."""
    root = np.floor(np.sqrt(values.astype(np.float64))).astype(np.int64)
    root -= root * root > values
    root += (root + 1) * (root + 1) <= values
    return root


def windowed(span: np.ndarray, count: int) -> np.ndarray:
    """[count, WINDOW] int64: the windows span[i * HOP : i * HOP + WINDOW], i < count, times the
    Hann window, in Q0: (x * w + 2^14) >> 15. `span`: the track's samples from the first
    window's first on (zeros outside the track included), at least (count - 1) * HOP + WINDOW."""
    views = np.lib.stride_tricks.sliding_window_view(span, WINDOW)[: (count - 1) * HOP + 1 : HOP]
    samples = views.astype(np.int64)
    samples *= hann()[None, :]
    samples += 1 << (WINDOW_BITS - 1)
    samples >>= WINDOW_BITS
    return samples


def track_span(pcm: np.ndarray, low: int, high: int) -> np.ndarray:
    """The track's samples low .. high - 1, zeros outside it (before 0 and from len(pcm) on)."""
    span = np.zeros(high - low, dtype=pcm.dtype)
    first, end = max(low, 0), min(high, len(pcm))
    if end > first:
        span[first - low : end - low] = pcm[first:end]
    return span


def windows(pcm: np.ndarray, start: int, count: int) -> np.ndarray:
    """[count, WINDOW] int64 Hann-windowed samples of windows start .. start + count (window h
    centred on sample h * HOP; zeros outside the track), in Q0: (x * w + 2^14) >> 15."""
    low = start * HOP - WINDOW // 2
    return windowed(track_span(pcm, low, low + (count - 1) * HOP + WINDOW), count)


def pair_magnitudes(frames: np.ndarray) -> np.ndarray:
    """[2P, WINDOW / 2 + 1] int64: 2 |X[k]| of [2P, WINDOW] windowed windows (exact). Windows
    2i and 2i + 1 go through one complex FFT (a as re, b as im): 2 A[k] = Z[k] + conj(Z[-k])
    and 2 B[k] = -i (Z[k] - conj(Z[-k])), exact in integers; a window's magnitudes depend on its
    partner's (the FFT's roundings), so the pairs are always windows 2i and 2i + 1."""
    bins = WINDOW // 2 + 1
    mirror = (-np.arange(bins)) % WINDOW
    pairs = frames.reshape(-1, 2, WINDOW)
    z_re, z_im = fft(pairs[:, 0, :], pairs[:, 1, :])
    zr, zi = z_re[:, :bins], z_im[:, :bins]
    mr, mi = z_re[:, mirror], z_im[:, mirror]
    a_re, a_im = zr + mr, zi - mi  # 2 A
    b_re, b_im = zi + mi, mr - zr  # 2 B
    a, b = isqrt(a_re * a_re + a_im * a_im), isqrt(b_re * b_re + b_im * b_im)
    return np.stack((a, b), axis=1).reshape(2 * len(pairs), bins)


def magnitudes(pcm: np.ndarray) -> np.ndarray:
    """[H, WINDOW / 2 + 1] int64: 2 |X_h[k]| of every window h = 0 .. len // HOP (exact), the
    whole spectrogram at once (H x 1025 int64: 0.4 GB for 20 minutes). The analysis never holds
    it (Spectrum streams); this plain form is what the streaming one is tested against."""
    count = len(pcm) // HOP + 1
    batches = [
        pair_magnitudes(windows(pcm, first, 2 * min(CHUNK, -(-(count - first) // 2))))
        for first in range(0, count, 2 * CHUNK)
    ]
    return np.concatenate(batches)[:count]


def band_bins(low: int, high: int) -> tuple[int, int]:
    """The bins [first, end) whose frequency k * RATE / WINDOW lies in [low, high) Hz."""
    return -(-low * WINDOW // RATE), min(WINDOW // 2 + 1, -(-high * WINDOW // RATE))


def band_sums(mags: np.ndarray) -> np.ndarray:
    """[W, len(BANDS)] int64: each window's magnitudes summed over each band's bins."""
    return np.stack(
        [mags[:, slice(*band_bins(low, high))].sum(axis=1) for low, high in BANDS.values()], axis=1
    )


def onset_flux(mags: np.ndarray, previous: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([W] the positive spectral flux of each window: its compressed magnitudes c = isqrt(256 m)
    less those of the window before it, summed where they grew; c of the last window).
    `previous`: c of the window before the first (zeros before the track: from silence)."""
    compressed = isqrt(mags << 8)
    before = np.vstack((previous[None, :], compressed[:-1]))
    return np.maximum(compressed - before, 0).sum(axis=1), compressed[-1].copy()


class Spectrum:
    """Each window's band sums and onset flux over a track pushed block by block, in memory
    bounded by a batch of 2 * `pairs` windows, never the whole spectrogram. Pushed samples wait
    until a batch of whole window pairs is complete; each batch's magnitudes are reduced at once
    to the windows' BANDS sums and onset flux; what the next batch needs is carried: the samples
    from the next window's first on (windows overlap by WINDOW - HOP samples) and the last
    window's compressed magnitudes (the next window's flux is over them). The values are those
    of the whole spectrogram (magnitudes), whatever the blocks and the batch size."""

    def __init__(self, pairs: int = CHUNK):
        self.pairs = pairs
        self.carry = np.zeros(WINDOW // 2, dtype=np.int16)  # samples from window `next`'s first
        self.held: list[np.ndarray] = []  # pushed blocks after the carry
        self.held_count = 0
        self.next = 0  # the next window to analyse (even: windows 2i and 2i + 1 share an FFT)
        self.previous = np.zeros(WINDOW // 2 + 1, dtype=np.int64)  # c of window next - 1
        self.bands: list[np.ndarray] = []
        self.onset: list[np.ndarray] = []

    def push(self, samples: np.ndarray) -> None:
        """Add the track's next samples."""
        self.held.append(samples)
        self.held_count += len(samples)
        if self.held_count >= 2 * self.pairs * HOP:
            span = self._span()
            ready = 2 * (max(0, (len(span) - WINDOW) // HOP + 1) // 2)  # whole pairs of windows
            self._analyse(span, ready)
            self.carry = span[ready * HOP :].copy()

    def finish(self, samples: int) -> tuple[np.ndarray, np.ndarray]:
        """([H, len(BANDS)] band sums, [H] onset flux) of windows h = 0 .. samples // HOP, the
        track of `samples` samples having been pushed (zeros after its end)."""
        count = samples // HOP + 1
        left = count - self.next
        left += left % 2  # an odd last window shares its FFT with the window after it
        span = self._span()
        missing = (left - 1) * HOP + WINDOW - len(span)
        if missing > 0:
            span = np.concatenate((span, np.zeros(missing, dtype=span.dtype)))
        self._analyse(span, left)
        return np.concatenate(self.bands)[:count], np.concatenate(self.onset)[:count]

    def _span(self) -> np.ndarray:
        span = np.concatenate((self.carry, *self.held))
        self.held, self.held_count = [], 0
        return span

    def _analyse(self, span: np.ndarray, count: int) -> None:
        """Windows next .. next + count (count even), span holding their samples, batch by batch."""
        for first in range(0, count, 2 * self.pairs):
            batch = min(2 * self.pairs, count - first)
            mags = pair_magnitudes(windowed(span[first * HOP :], batch))
            flux, self.previous = onset_flux(mags, self.previous)
            self.bands.append(band_sums(mags))
            self.onset.append(flux)
        self.next += count


class Loudness:
    """Each frame's RMS over a track pushed block by block: frame f's samples [f RATE // fps,
    (f + 1) RATE // fps), their squares summed as they come (a frame's part in earlier blocks
    carried as its partial sum)."""

    def __init__(self, fps: int):
        self.fps = fps
        self.start = 0  # the first sample not yet pushed
        self.frame = 0  # the first frame not yet summed whole (its partial sum carried)
        self.partial = 0
        self.sums: list[np.ndarray] = []

    def push(self, samples: np.ndarray) -> None:
        """Add the track's next samples."""
        if len(samples) == 0:
            return
        low, high = self.start, self.start + len(samples)
        prefix = np.concatenate(([0], np.cumsum(samples.astype(np.int64) ** 2)))
        last = -(-high * self.fps // RATE)  # the frames before it start before `high`
        edges = np.arange(self.frame, last + 1, dtype=np.int64) * RATE // self.fps - low
        sums = np.diff(prefix[np.clip(edges, 0, len(samples))])
        sums[0] += self.partial
        self.sums.append(sums[:-1])
        self.frame, self.partial, self.start = last - 1, int(sums[-1]), high

    def finish(self, samples: int) -> np.ndarray:
        """[frame_count(samples, fps)] int64: isqrt(sum of squares // count) of each frame's
        samples (0 for a frame past the track), the track of `samples` samples having been pushed."""
        count = frame_count(samples, self.fps)
        sums = np.zeros(count, dtype=np.int64)
        done = np.concatenate([*self.sums, [self.partial]])[:count]
        sums[: len(done)] = done
        f = np.arange(count, dtype=np.int64)
        size = np.minimum((f + 1) * RATE // self.fps, samples) - np.minimum(f * RATE // self.fps, samples)
        return isqrt(np.where(size > 0, sums // np.maximum(size, 1), 0))


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
    """[F] the largest of values[first:end] for each frame's span (0 where it is empty): all
    frames at once, a step through the widest span (44 windows at 1 fps)."""
    out = np.zeros(len(spans), dtype=np.int64)
    f = np.flatnonzero(spans[:, 1] > spans[:, 0])
    first, last = spans[f, 0], spans[f, 1] - 1
    best = values[first]
    for k in range(1, int((last - first).max(initial=0)) + 1):
        best = np.maximum(best, values[np.minimum(first + k, last)])
    out[f] = best
    return out


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


class Analyser:
    """`analyse` of a track pushed block by block: the PCM's sha256, each frame's loudness and
    each window's band sums and onset flux are taken as the samples come (Spectrum, Loudness),
    so memory is bounded by a batch of 2 * `pairs` windows plus a few integers a window and a
    frame, never the track's spectrogram; `result` then gives the same Analysis as analyse of
    all the samples at once."""

    def __init__(self, fps: int, pairs: int = CHUNK):
        self.fps = fps
        self.spectrum = Spectrum(pairs)
        self.loudness = Loudness(fps)
        self.digest = hashlib.sha256()
        self.samples = 0
        self.measured: tuple | None = None  # (frames, the normalised columns, the onset flux)

    def push(self, samples: np.ndarray) -> None:
        """Add the track's next samples (16-bit values: int16, or int64 within int16's range)."""
        self.digest.update(np.ascontiguousarray(samples, dtype="<i2"))
        self.samples += len(samples)
        self.spectrum.push(samples)
        self.loudness.push(samples)

    def result(self, bpm: Fraction | None = None, offset: Fraction | None = None) -> Analysis:
        """The Analysis of everything pushed (analyse's `bpm` and `offset`); asked again, with
        another tempo or first beat, from the same measures (nothing is pushed after the first)."""
        if self.measured is None:
            self.measured = self._measure()
        frames, columns, onset = self.measured
        tempo = bpm if bpm is not None else detect_tempo(onset)
        if tempo is None:
            beats, start = np.zeros((frames.count, 2), dtype=np.int64), Fraction(0)
        else:
            start = offset if offset is not None else first_beat(onset, tempo)
            beats = beat_frames(frames, tempo, start, Fraction(self.samples, RATE))
        table = np.stack([*columns, beats[:, 0], beats[:, 1]], axis=1)
        return Analysis(self.fps, table, tempo, start, self.digest.hexdigest(), self.samples)

    def _measure(self) -> tuple:
        frames = Frames(self.fps, frame_count(self.samples, self.fps))
        bands, onset = self.spectrum.finish(self.samples)
        spans = frames.hops(len(onset))
        columns = [normalised(self.loudness.finish(self.samples))]
        columns += [normalised(per_frame_max(bands[:, b], spans)) for b in range(len(BANDS))]
        columns.append(normalised(per_frame_max(onset, spans)))
        self.spectrum = self.loudness = None  # their windows' and frames' lists: done with
        return frames, columns, onset


def first_beat(onset: np.ndarray, tempo: Fraction) -> Fraction:
    """The detected first beat in seconds: beat_phase's window, or a period earlier where that
    lies less than EARLY before 0 (a centred window hears a beat early)."""
    start = Fraction(beat_phase(onset, Fraction(60 * RATE, HOP) / tempo) * HOP, RATE)
    if start - 60 / tempo >= -EARLY:
        start -= 60 / tempo
    return start


def analyse(
    pcm: np.ndarray,
    fps: int,
    bpm: Fraction | None = None,
    offset: Fraction | None = None,
    pairs: int = CHUNK,
) -> Analysis:
    """Every feature of a track of 16-bit mono PCM at RATE, one value a frame at `fps` for the
    frames the track fills (frame_count). `bpm`: the tempo (None: detected); `offset`: the first
    beat in seconds (None: detected). The track is analysed in blocks of 2 * `pairs` windows'
    hops (Analyser): memory is bounded by the batch, not the track; the values do not depend on
    `pairs`."""
    pcm = np.asarray(pcm)
    analyser = Analyser(fps, pairs)
    block = 2 * pairs * HOP
    for first in range(0, len(pcm), block):
        samples = pcm[first : first + block]
        analyser.push(samples if samples.dtype == np.int16 else samples.astype(np.int64))
    return analyser.result(bpm, offset)


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
