"""The curated audio presets' soundtracks (presets/audio/*.flac), synthesised here so that their
licence is the project's own: a drum pattern (kick, snare, closed hats) over a bass line, in
numpy, written as 16-bit mono FLAC at 22050 Hz by PyAV's FLAC encoder.

Every sound is made from sines, decaying envelopes and seeded noise (numpy's PCG64 with a fixed
seed), so running the script again writes the same samples; the committed files are what the
presets read (a FLAC decodes to the same integers everywhere: docs/audio.md).

Usage: python scripts/make_soundtracks.py [FOLDER]   (default: presets/audio beside this script)
"""

from __future__ import annotations

import sys
from pathlib import Path

import av
import numpy as np

RATE = 22050


def envelope(length: int, decay: float) -> np.ndarray:
    """exp(-t / decay) over `length` samples (decay in seconds)."""
    return np.exp(-np.arange(length) / (decay * RATE))


def kick(rng) -> np.ndarray:
    """A sine sweeping from 150 Hz down to 45 Hz with a fast decay and a click."""
    n = int(0.35 * RATE)
    t = np.arange(n) / RATE
    freq = 45 + 105 * np.exp(-t / 0.03)
    phase = 2 * np.pi * np.cumsum(freq) / RATE
    click = rng.standard_normal(n) * envelope(n, 0.002) * 0.3
    return (np.sin(phase) * envelope(n, 0.12) + click) * 0.9


def snare(rng) -> np.ndarray:
    """Noise and a 190 Hz body, decaying."""
    n = int(0.25 * RATE)
    body = np.sin(2 * np.pi * 190 * np.arange(n) / RATE) * envelope(n, 0.05) * 0.4
    noise = rng.standard_normal(n) * envelope(n, 0.07) * 0.35
    return body + noise


def hat(rng) -> np.ndarray:
    """High-passed noise (first difference), short."""
    n = int(0.06 * RATE)
    noise = np.diff(rng.standard_normal(n + 1)) * envelope(n, 0.012) * 0.12
    return noise


def bass_note(freq: float, seconds: float) -> np.ndarray:
    """A saw-ish bass (three harmonics), plucked."""
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    tone = sum(np.sin(2 * np.pi * freq * k * t) / k for k in (1, 2, 3))
    attack = np.minimum(1, np.arange(n) / (0.005 * RATE))
    return tone * attack * envelope(n, seconds * 0.6) * 0.35


def place(track: np.ndarray, sound: np.ndarray, at: float) -> None:
    start = int(round(at * RATE))
    end = min(len(track), start + len(sound))
    if start < end:
        track[start:end] += sound[: end - start]


def pattern(bpm: float, bars: int, kicks, snares, hats, bass, seed: int) -> np.ndarray:
    """A loop of `bars` 4/4 bars: drum hits at sixteenth-note positions of each bar (kicks,
    snares, hats: lists of 0..15), and bass notes (sixteenth, length in sixteenths, Hz) per bar
    from the list `bass` (one list of notes per bar, repeated)."""
    rng = np.random.default_rng(seed)
    sixteenth = 60 / bpm / 4
    track = np.zeros(int(bars * 16 * sixteenth * RATE) + RATE // 2)
    sounds = {"kick": kick(rng), "snare": snare(rng), "hat": hat(rng)}
    for bar in range(bars):
        origin = bar * 16 * sixteenth
        for name, positions in (("kick", kicks), ("snare", snares), ("hat", hats)):
            for p in positions:
                place(track, sounds[name], origin + p * sixteenth)
        for p, length, freq in bass[bar % len(bass)]:
            place(track, bass_note(freq, length * sixteenth), origin + p * sixteenth)
    track = track[: int(bars * 16 * sixteenth * RATE)]
    fade = int(0.01 * RATE)
    track[-fade:] *= np.linspace(1, 0, fade)
    return np.round(track / np.abs(track).max() * 0.89 * 32767).astype(np.int16)


A1, C2, D2, E2, F1, G1 = 55.0, 65.41, 73.42, 82.41, 43.65, 49.0

TRACKS = {
    # 120 bpm, 8 bars (16 s): four on the floor, snare on 2 and 4, eighth hats; A minor bass
    "pulse": dict(
        bpm=120,
        bars=8,
        kicks=[0, 4, 8, 12],
        snares=[4, 12],
        hats=[0, 2, 4, 6, 8, 10, 12, 14],
        bass=[
            [(0, 3, A1), (3, 1, A1), (6, 2, C2), (10, 2, A1), (14, 2, E2)],
            [(0, 3, F1), (3, 1, F1), (6, 2, A1), (10, 2, F1), (14, 2, G1)],
        ],
        seed=11,
    ),
    # 96 bpm, 6 bars (15 s): a broken beat, sixteenth hats, a rolling D minor bass
    "rolling": dict(
        bpm=96,
        bars=6,
        kicks=[0, 3, 10],
        snares=[4, 12],
        hats=list(range(16)),
        bass=[
            [(0, 2, D2), (2, 1, D2), (3, 2, F1 * 2), (6, 1, D2), (8, 3, A1), (11, 2, C2), (14, 2, D2)],
            [(0, 2, G1), (2, 1, G1), (3, 2, A1), (6, 1, C2), (8, 3, G1), (11, 2, F1), (14, 2, E2 / 2)],
        ],
        seed=23,
    ),
}


def write_flac(path: Path, samples: np.ndarray) -> None:
    with av.open(str(path), "w", format="flac") as out:
        stream = out.add_stream("flac", rate=RATE)
        stream.layout = "mono"
        stream.format = "s16"
        for start in range(0, len(samples), 4096):
            frame = av.AudioFrame.from_ndarray(
                samples[None, start : start + 4096], format="s16", layout="mono"
            )
            frame.sample_rate = RATE
            frame.pts = start
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, spec in TRACKS.items():
        path = folder / f"{name}.flac"
        write_flac(path, pattern(**spec))
        print(f"{path}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main(
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parent.parent / "presets" / "audio"
    )
