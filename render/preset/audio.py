"""A preset's soundtrack (the `audio` section, docs/audio.md): the sound file read under the
input rules, decoded by the pinned PyAV, mixed and resampled exactly, its features
(render/preset/audio_features.py) turned into the curves of the keys that follow them.

A sound file is a regular file of at most MAX_SOUND_BYTES, decoded by PyAV (WAV, FLAC, MP3,
M4A/AAC, OGG Vorbis or Opus, ...): its first audio stream, at a rate from MIN_RATE to MAX_RATE
with at most MAX_CHANNELS channels, at most MAX_SECONDS long (refused from the header's duration
where it has one, and while decoding). Every decoded sample becomes a 16-bit integer (integer
formats by shifts rounded half up, float formats as floor(x * 32768 + 1/2) in float64, which is
exact for float32 samples; clipped), the channels are mixed to their rounded mean, and the mono
track is resampled to audio_features.RATE by an exact area average (each output sample the mean
of the source samples it covers, weighted by the covered time, rounded half up, in integers: the
1D form of images.box_resize). A track whose loudest sample is below MIN_PEAK is silent and
refused; so is one of no samples.

The preset's validation (schema.Preset) calls `resolve`: it fixes `run.steps: audio` to the
track's frames, and gives every followed key (schedule.Follow) and periodic shape
(schedule.Wave) its curve: frame f's value holds from step warmup + f * steps_per_frame + 1 to
the frame's own step (the steps that make the frame and the step its look is valued at), frame
0's from step 0. A `render --from` file carries the feature table (carried.py), so it renders
again without the sound file; the file itself only with `audio.carry: true`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from pydantic import Field, ValidationInfo, field_validator

from ..base import lazy
from ..base.errors import printable
from ..base.files import stage
from ..base.inputs import NamedValueError, file_problem
from ..formats.mp4_audio import read_sound
from . import audio_features as features
from .audio_features import FEATURES, FULL, NEEDS_SOUND, RATE, Analysis
from .carried import MAX_TABLE_FRAMES
from .images import remember
from .schedule import (
    Follow,
    Musical,
    Resolved,
    Schedule,
    Wave,
    milliseconds,
    period_of,
)
from .sections import OptionalSection, located

# start-up: loaded at first use (base/lazy.py)
av = lazy.module("av")
np = lazy.module("numpy")

MAX_SOUND_BYTES = 256 << 20  # a sound file: at most 256 MiB
MAX_SECONDS = 20 * 60  # a track: at most 20 minutes
MIN_RATE, MAX_RATE = 8000, 192_000  # samples per second
MAX_CHANNELS = 8
MIN_PEAK = 33  # a track whose loudest sample is below this (-60 dBFS) is silent
MAX_CARRIED_SOUND = 16 << 20  # audio.carry: a sound file of at most 16 MiB travels in outputs
SOUND_KINDS = "WAV, FLAC, MP3, M4A/AAC, OGG"
BLOCK = 1 << 20  # output samples resampled at a time
CHUNK = 1 << 18  # source samples mixed before they are resampled (Resampler)

_TRACKS: dict[tuple, Track] = {}
_ANALYSERS: dict[tuple, features.Analyser] = {}  # by (sound, fps): the measures of its features
_ANALYSES: dict[tuple, Analysis] = {}


def sound_path(path: str | None, info: ValidationInfo) -> str | None:
    """A sound file's path made absolute against the preset file's folder (the validation
    context's `base`), as image paths are (sections.image_path), and checked: a regular file of
    at most MAX_SOUND_BYTES. A path the context's `carried` entries hold is kept as it is."""
    if path is None:
        return None
    resolved = located(path, info, "a sound file")
    if resolved is None:
        return path
    relative = None
    if not Path(path).expanduser().is_absolute():
        relative = "the preset's folder" if (info.context or {}).get("base") else "the current folder"
    problem = sound_file_problem(resolved, relative)
    if problem:
        raise NamedValueError(printable(problem))
    return resolved


def sound_file_problem(path: str, relative_to: str | None = None) -> str | None:
    """Why `path` cannot be a sound file (missing, no regular file, over MAX_SOUND_BYTES), naming
    it once and saying what a sound file is; None. `relative_to`: where a relative path given
    was found from (the message says so)."""
    problem = file_problem(path)
    named = path if relative_to is None else f"{path} (relative to {relative_to})"
    if problem == "no such file":
        return f"no such sound file: {named}; give a sound file ({SOUND_KINDS})"
    if problem:
        return f"{named} {problem}: give a sound file ({SOUND_KINDS})"
    size = os.stat(path).st_size
    if size > MAX_SOUND_BYTES:
        return (
            f"{path} is {size} bytes; a sound file may have at most {MAX_SOUND_BYTES} "
            f"({MAX_SOUND_BYTES >> 20} MiB): cut or compress it ({SOUND_KINDS})"
        )
    return None


class Audio(OptionalSection):
    """The soundtrack: a sound file whose features schedules follow (docs/audio.md); without a
    path, a tempo alone (bpm) for periodic shapes in beats and bars."""

    path: str | None = Field(None, description=f"a sound file ({SOUND_KINDS})")
    bpm: float | None = Field(None, ge=20, le=400, description="the tempo; unset: detected from the track")
    offset: float | None = Field(
        None,
        ge=0,
        le=MAX_SECONDS,
        description="seconds to the first beat; unset: detected (0 without a track)",
    )
    carry: bool | None = Field(
        None, description=f"outputs carry the sound file itself (at most {MAX_CARRIED_SOUND >> 20} MiB)"
    )

    _path = field_validator("path")(sound_path)


# ---------------------------------------------------------------------------------------------
# Decoding


@dataclass(frozen=True)
class Track:
    """A decoded track: `pcm` int16 mono at RATE (None where decode streamed it to an analyser
    instead), the source's rate, channels and codec, the sha256 of the PCM (little-endian
    16-bit) and its length in samples."""

    pcm: np.ndarray | None
    rate: int
    channels: int
    codec: str
    sha256: str
    samples: int

    @property
    def seconds(self) -> Fraction:
        return Fraction(self.samples, RATE)


def to_int16(samples: np.ndarray, kind: str) -> np.ndarray:
    """int64 16-bit values of decoded samples of sample format `kind` (PyAV's name without 'p'):
    u8, s16, s32, s64 by shifts rounded half up; flt and dbl as floor(x * 32768 + 1/2)
    (non-finite values as 0); clipped to -32768 .. 32767."""
    if kind == "u8":
        values = (samples.astype(np.int64) - 128) << 8
    elif kind == "s16":
        values = samples.astype(np.int64)
    elif kind == "s32":
        values = (samples.astype(np.int64) + (1 << 15)) >> 16
    elif kind == "s64":
        values = (samples.astype(np.int64) >> 32) + (1 << 15) >> 16
    elif kind in ("flt", "dbl"):
        wide = samples.astype(np.float64)
        wide = np.where(np.isfinite(wide), wide, 0.0)
        values = np.floor(np.clip(wide, -2.0, 2.0) * 32768 + 0.5).astype(np.int64)
    else:
        raise ValueError(f"samples of format {kind!r}, which are not read")
    return np.clip(values, -32768, 32767)


def mix(channels: np.ndarray) -> np.ndarray:
    """[C, N] int64 -> [N] int16: the channels' mean, rounded half up."""
    count = channels.shape[0]
    return ((2 * channels.sum(axis=0) + count) // (2 * count)).astype(np.int16)


def resample(mono: np.ndarray, rate: int) -> np.ndarray:
    """int16 mono at `rate` -> int16 at RATE: output sample j is the mean of the source over
    [j rate / RATE, (j + 1) rate / RATE) seconds times RATE (source sample i covering [i, i + 1)),
    weighted by the time covered, rounded half up; exact in integers. Output samples whose span
    passes the source's end are dropped. The whole track at once: Resampler streams it."""
    stream = Resampler(rate)
    stream.push(mono)
    return stream.result()


class Resampler:
    """`resample` block by block: mono int16 blocks at `rate` pushed in order give the same
    RATE samples as resample(all of them, rate). Between pushes it keeps only the output and a
    carry: the source samples from the first one the next output sample covers (fewer than
    rate / RATE + 2), plus pushed blocks held until they reach CHUNK samples. With a `sink`, the
    output is handed to it block by block, in order, and not kept."""

    def __init__(self, rate: int, sink: Callable[[np.ndarray], None] | None = None):
        self.rate = rate
        self.carry = np.empty(0, dtype=np.int16)
        self.start = 0  # the source index of carry[0]
        self.made = 0  # output samples made so far
        self.held: list[np.ndarray] = []
        self.held_count = 0
        self.out: list[np.ndarray] = []
        self.sink = sink if sink is not None else self.out.append

    def push(self, mono: np.ndarray) -> None:
        """Add the next source samples (int16 mono at the rate)."""
        self.held.append(mono)
        self.held_count += len(mono)
        if self.held_count >= CHUNK:
            self._flush()

    def result(self) -> np.ndarray:
        """The RATE samples of everything pushed (those whose span passes its end dropped);
        with a sink, the last of them handed to it and none returned."""
        self._flush()
        return np.concatenate(self.out) if self.out else np.empty(0, dtype=np.int16)

    def _flush(self) -> None:
        if not self.held:
            return
        source = np.concatenate([self.carry, *self.held])
        self.held, self.held_count = [], 0
        rate, end = self.rate, self.start + len(source)
        count = end * RATE // rate  # output samples whose span ends within the source so far
        for j0 in range(self.made, count, BLOCK):
            self.sink(area_means(source, self.start, j0, min(count, j0 + BLOCK), rate))
        self.made = count
        first = self.made * rate // RATE  # the first source sample the next output covers
        self.carry = source[first - self.start :].copy()
        self.start = first


def area_means(source: np.ndarray, start: int, j0: int, j1: int, rate: int) -> np.ndarray:
    """Output samples j0 .. j1 - 1 of `resample` (int16), from `source`: the int16 source
    samples from index `start`, holding every sample those outputs cover."""
    if rate == RATE:
        return source[j0 - start : j1 - start].astype(np.int16)
    i0 = j0 * rate // RATE
    i1 = -(-j1 * rate // RATE) + 1
    local = source[i0 - start : i1 - start].astype(np.int64)
    prefix = np.concatenate(([0], np.cumsum(local))) * RATE  # integral at i0 + k, in 1/RATE units

    def integral(x: np.ndarray) -> np.ndarray:
        i, rem = np.divmod(x, RATE)  # x: time in 1/RATE source samples
        k = i - i0
        inside = np.minimum(k, len(local) - 1)
        return prefix[k] + np.where(rem > 0, local[inside] * rem, 0)

    j = np.arange(j0, j1 + 1, dtype=np.int64)
    area = np.diff(integral(j * rate))
    return ((2 * area + rate) // (2 * rate)).astype(np.int16)


def decode(source, name: str, analyser: features.Analyser | None = None) -> Track:
    """The track of a sound file (a path, or its bytes); ValueError naming the problem. With an
    `analyser`, the RATE samples are pushed to it as they are made and not kept (Track.pcm
    None): the track is never held whole."""
    try:
        container = read_sound(source)
    except (av.error.FFmpegError, OSError, ValueError, UnicodeDecodeError) as error:
        raise ValueError(
            f"{name} is not a sound file PyAV can read ({SOUND_KINDS}): {type(error).__name__}: {error}"
        ) from None
    with container:
        if not container.streams.audio:
            raise ValueError(f"{name} holds no audio stream (a sound file: {SOUND_KINDS})")
        stream = container.streams.audio[0]
        context = stream.codec_context
        rate, channels = context.sample_rate or 0, context.channels or 0
        _check_rate(name, rate, channels)
        if container.duration is not None and container.duration > MAX_SECONDS * 1_000_000:
            raise _too_long(name, Fraction(container.duration, 1_000_000))
        heard = Heard(analyser)
        resampler, total = Resampler(rate, heard.take), 0
        try:
            for frame in container.decode(stream):
                if frame.sample_rate != rate:
                    raise ValueError(
                        f"{name} changes its sample rate from {rate} to {frame.sample_rate} Hz "
                        "within the track: convert it to one rate"
                    )
                data = frame.to_ndarray()
                kind, planar = frame.format.name.rstrip("p"), frame.format.is_planar
                count = frame.layout.nb_channels
                data = data if planar else data.reshape(-1, count).T
                if count != channels:
                    raise ValueError(
                        f"{name} changes its channels from {channels} to {count} within the track"
                    )
                resampler.push(mix(to_int16(data, kind)))
                total += data.shape[1]
                if total > MAX_SECONDS * rate:
                    raise _too_long(name, None)
        except av.error.FFmpegError as error:
            raise ValueError(
                f"{name}: the sound cannot be decoded ({type(error).__name__}: {error}): the file is "
                f"damaged or no {SOUND_KINDS}"
            ) from None
        codec = context.name
    if total == 0:
        raise ValueError(f"{name} holds no sound (0 samples decoded): give a track of at least a frame")
    resampler.result()  # the last samples to `heard`
    if heard.samples == 0:
        raise ValueError(f"{name} holds no sound (less than one sample at {RATE} Hz)")
    if heard.peak < MIN_PEAK:
        raise ValueError(
            f"{name} is silent (its loudest sample is {heard.peak} of 32767, below {MIN_PEAK}: -60 dBFS): "
            "nothing to follow; give a track with sound"
        )
    return Track(heard.pcm(), rate, channels, codec, heard.digest.hexdigest(), heard.samples)


class Heard:
    """What decode keeps of the RATE track as the Resampler makes it, block by block: its
    length, its loudest sample and its sha256 (16-bit little-endian), and the blocks themselves,
    or, given an Analyser, nothing more: the blocks are pushed to it."""

    def __init__(self, analyser: features.Analyser | None):
        self.analyser = analyser
        self.blocks: list[np.ndarray] = []
        self.samples = self.peak = 0
        self.digest = hashlib.sha256()

    def take(self, block: np.ndarray) -> None:
        """The track's next int16 samples."""
        if len(block) == 0:
            return
        self.samples += len(block)
        self.peak = max(self.peak, int(block.max()), -int(block.min()))  # no int64 copy
        self.digest.update(np.ascontiguousarray(block, dtype="<i2"))  # no copy on little-endian
        if self.analyser is None:
            self.blocks.append(block)
        else:
            self.analyser.push(block)

    def pcm(self) -> np.ndarray | None:
        """The whole track (int16), or None where it went to an analyser."""
        if self.analyser is not None:
            return None
        return np.concatenate(self.blocks) if self.blocks else np.empty(0, dtype=np.int16)


def _check_rate(name: str, rate: int, channels: int) -> None:
    if not MIN_RATE <= rate <= MAX_RATE:
        raise ValueError(
            f"{name} has a sample rate of {rate} Hz; a sound file has {MIN_RATE} to {MAX_RATE} Hz "
            "(44100 or 48000 are usual): convert it"
        )
    if not 1 <= channels <= MAX_CHANNELS:
        raise ValueError(f"{name} has {channels} channels; a sound file has 1 to {MAX_CHANNELS}")


def _too_long(name: str, seconds: Fraction | None) -> ValueError:
    length = f" is {float(seconds):.1f} seconds long;" if seconds is not None else " is longer than allowed:"
    return ValueError(
        f"{name}{length} a track may last at most {MAX_SECONDS} seconds ({MAX_SECONDS // 60} minutes): cut it"
    )


def read_track(path: str) -> Track:
    """The track of a sound file with its PCM, decoded once per (path, modification time,
    size). The features need no PCM held (analyser_of)."""
    key = sound_file_key(path)
    if key not in _TRACKS:
        remember(_TRACKS, key, decode(path, path))
    return _TRACKS[key]


def sound_file_key(path: str) -> tuple:
    """("file", path, modification time, size): a sound file's cache key; ValueError where it
    is no sound file (sound_file_problem)."""
    problem = sound_file_problem(path)
    if problem:
        raise ValueError(problem)
    stat = os.stat(path)
    return ("file", path, stat.st_mtime_ns, stat.st_size)


def sound_bytes(preset) -> bytes | None:
    """The sound file's bytes the preset renders with: those a --from file carries, or the
    file's; None without a sound file."""
    audio = preset.audio
    if audio is None or audio.path is None:
        return None
    entry = preset.carried.get(audio.path)
    if entry is not None and getattr(entry, "sound", None) is not None:
        return entry.sound
    if entry is not None:
        return None
    return Path(audio.path).read_bytes()


def sound_source(preset) -> tuple[tuple, str | bytes, str] | None:
    """(cache key, what decode reads, its name in messages) of the preset's sound: the sound a
    --from file carries, or the sound file; None where it has none or only a carried feature
    table. ValueError where the file is no sound file."""
    audio = preset.audio
    if audio is None or audio.path is None:
        return None
    entry = preset.carried.get(audio.path)
    if entry is None:
        return sound_file_key(audio.path), audio.path, audio.path
    if getattr(entry, "sound", None) is None:
        return None
    key = ("carried", hashlib.sha256(entry.sound).hexdigest())
    return key, entry.sound, f"the sound {audio.path} the file carries"


def analyser_of(preset) -> features.Analyser:
    """The preset's sound decoded straight into a features.Analyser at its fps, once per sound
    and fps: the PCM streams from the decoder to the analysis and is never held whole. The
    preset has a sound (sound_source); ValueError naming a problem."""
    found = sound_source(preset)
    if found is None:
        raise ValueError(f"{preset.audio.path}: the file carries neither the sound nor its features")
    key, source, name = found
    fps = preset.output.fps
    if (key, fps) not in _ANALYSERS:
        analyser = features.Analyser(fps)
        decode(source, name, analyser)
        remember(_ANALYSERS, (key, fps), analyser)
    return _ANALYSERS[(key, fps)]


# ---------------------------------------------------------------------------------------------
# Features and curves


def analysis_of(preset) -> Analysis | None:
    """The features of the preset's audio at its fps: a carried table (render --from), the
    track's, or a tempo's alone; None without an audio section. ValueError naming a problem."""
    audio = preset.audio
    if audio is None:
        return None
    fps = preset.output.fps
    bpm = None if audio.bpm is None else Fraction(str(audio.bpm))
    offset = None if audio.offset is None else Fraction(str(audio.offset))
    if audio.path is None:
        if bpm is None:
            raise ValueError("audio: give a sound file (path) or a tempo (bpm)")
        return features.tempo_only(preset.frames, fps, bpm, offset or Fraction(0))
    entry = preset.carried.get(audio.path)
    table = getattr(entry, "analysis", None)
    if table is not None and getattr(entry, "sound", None) is None:
        if table.fps != fps or (bpm is not None and table.bpm != bpm):
            raise ValueError(
                f"the file carries the features of {audio.path} at {table.fps} fps"
                + ("" if bpm is None else f" and {float(table.bpm or 0):g} bpm")
                + f", not for {fps} fps"
                + ("" if bpm is None else f" and {float(bpm):g} bpm")
                + ": give the sound file (--set audio.path=FILE) to change them"
            )
        return table
    analyser = analyser_of(preset)
    key = (analyser.digest.hexdigest(), fps, bpm, offset)
    if key not in _ANALYSES:
        remember(_ANALYSES, key, analyser.result(bpm, offset))
    return _ANALYSES[key]


def frame_steps(run) -> list[int]:
    """The step each frame's value starts at: 0 for frame 0, warmup + f * steps_per_frame + 1
    for frame f >= 1 (its value holds through the frame's own step, where its look is valued)."""
    frames = -(-run.steps // run.steps_per_frame)
    return [0] + [run.warmup + f * run.steps_per_frame + 1 for f in range(1, frames)]


def shape(kind: str, turn: Fraction) -> Fraction:
    """A wave's share (0 .. 1) at `turn` (0 .. 1) of its period: sine (1 + sin) / 2 from the
    unit circle of 4096 steps (the turn rounded half to even to a step), triangle 0 -> 1 -> 0,
    saw 0 -> 1, square 1 then 0."""
    if kind == "sine":
        _, sin = features.unit_circle(4096)
        step = round(turn * 4096) % 4096
        return (1 + Fraction(int(sin[step]), 1 << features.TWIDDLE_BITS)) / 2
    if kind == "triangle":
        return 2 * turn if turn < Fraction(1, 2) else 2 - 2 * turn
    if kind == "saw":
        return turn
    return Fraction(1) if turn < Fraction(1, 2) else Fraction(0)


def follow_shares(value: Follow, analysis: Analysis, frames: int) -> list[Fraction]:
    """Frame by frame, the smoothed share (0 .. 1) of the feature a key follows (0 past the
    track's end)."""
    column = analysis.column(value.audio)[:frames]
    if len(column) < frames:
        column = np.concatenate((column, np.zeros(frames - len(column), dtype=np.int64)))
    return features.smooth(column, analysis.fps, milliseconds(value.attack), milliseconds(value.release))


def wave_shares(value: Wave, preset, analysis: Analysis | None) -> list[Fraction]:
    """Frame by frame, a wave's share (0 .. 1): its turn at the frame's step (a period in steps)
    or at the frame's start in time (in beats or bars of the audio section's tempo)."""
    length, unit = period_of(value.period)
    run, fps = preset.run, preset.output.fps
    shares = []
    for f in range(preset.frames):
        if unit == "steps":
            at = Fraction(run.warmup + min((f + 1) * run.steps_per_frame, run.steps)) / length
        else:
            beats = (Fraction(f, fps) - analysis.offset) * analysis.bpm / 60
            at = beats / (length * (features.BEATS_PER_BAR if unit == "bars" else 1))
        shares.append(shape(value.wave, (at + Fraction(str(value.phase))) % 1))
    return shares


def resolve(preset, context: dict | None) -> list[str]:
    """Give the preset's followed and periodic keys their curves, and `run.steps: audio` its
    steps (the track's frames times steps_per_frame); the problems found, each naming its key.
    Without any, nothing is read."""
    keys = [(path, value) for path, value in preset.schedules if isinstance(value, Resolved)]
    musical = [
        (path, value)
        for path, value in preset.schedules
        if isinstance(value, Schedule) and value.musical_keys
    ]
    wants_length = preset.run.steps == "audio"
    if preset.audio is None and not keys and not wants_length and not musical:
        problem = loop_bars_problem(preset, None)
        return [problem] if problem else []
    if preset.run.steps != "audio" and preset.frames > MAX_TABLE_FRAMES and (keys or preset.audio):
        return [  # a value a frame is worked out exactly here (10 million frames took minutes)
            f"run.steps: {preset.run.steps} steps at {preset.run.steps_per_frame} a frame are "
            f"{preset.frames} frames; a preset with an audio section or followed or periodic keys has at most "
            f"{MAX_TABLE_FRAMES} (the feature table its outputs carry): fewer steps, or more a frame"
        ]
    problems = []
    if preset.audio is None:
        for path, _ in musical:
            problems.append(
                f"{path}.keys: a key in beats or bars needs a tempo: add audio: {{path: FILE}} or audio: {{bpm: N}}"
            )
        for path, value in keys:
            if isinstance(value, Follow) or period_of(value.period)[1] != "steps":
                problems.append(
                    f"{path}: follows the soundtrack, but the preset has no audio section: add "
                    "audio: {path: FILE} (or audio: {bpm: N} for a period in beats or bars)"
                )
        if wants_length:
            problems.append("run.steps: audio takes the steps from the track: add audio: {path: FILE}")
    if wants_length and preset.audio is not None and preset.audio.path is None:
        problems.append("run.steps: audio takes the steps from the track: give audio.path")
    analysis = None
    if preset.audio is not None and not problems:
        try:
            analysis = analysis_of(preset)
        except ValueError as error:
            problems.append(f"audio.path: {printable(error)}" if preset.audio.path else str(error))
    if wants_length:
        steps = (analysis.frames if analysis is not None else 1) * preset.run.steps_per_frame
        object.__setattr__(preset.run, "steps", steps)
        if analysis is not None and steps + preset.run.warmup > 10_000_000:
            problems.append(
                f"run.steps: audio gives {analysis.frames} frames x {preset.run.steps_per_frame} steps "
                f"= {steps} steps; at most 10000000 with the warmup: lower run.steps_per_frame"
            )
    if problems:
        return problems
    problem = loop_bars_problem(preset, analysis)
    if problem:
        problems.append(problem)
    for path, value in musical:
        if analysis.bpm is None:
            problems.append(f"{path}.keys: a key in beats or bars needs a tempo: give audio.bpm")
            continue
        value.set_musical({key: musical_step(form, preset, analysis) for key, form in value.musical_keys})
    for path, value in keys:
        if isinstance(value, Follow):
            if analysis.pcm_sha256 is None and analysis.samples == 0 and value.audio in NEEDS_SOUND:
                problems.append(
                    f"{path}: the feature {value.audio!r} needs a sound file (audio.path); a tempo "
                    "alone gives beat and bar"
                )
                continue
            if value.audio in ("beat", "bar") and analysis.bpm is None:
                problems.append(
                    f"{path}: the track has no tempo to find beats in (no onsets): give audio.bpm"
                )
                continue
            shares = follow_shares(value, analysis, preset.frames)
        else:
            if period_of(value.period)[1] != "steps" and (analysis is None or analysis.bpm is None):
                problems.append(f"{path}: a period in beats or bars needs a tempo: give audio.bpm")
                continue
            shares = wave_shares(value, preset, analysis)
        value.set_curve(curve(value, shares, frame_steps(preset.run)))
    return problems


def loop_tempo(preset) -> tuple[float | Fraction, str]:
    """(bpm, whose) of output.loop_bars: output.bpm as written (whose ''), else the audio
    section's tempo: audio.bpm as written or the track's, detected to 1/100 bpm (whose says which).
    The preset's validation (loop_bars_problem) has refused a loop_bars without either."""
    if preset.output.bpm is not None:
        return preset.output.bpm, ""
    analysis = analysis_of(preset)
    whose = " (audio.bpm)" if preset.audio.bpm is not None else " (the track's, detected)"
    return analysis.bpm, whose


def loop_bars_problem(preset, analysis: Analysis | None) -> str | None:
    """Why output.loop_bars has no tempo: no output.bpm and no audio section, or a track
    without a tempo (no onsets) and no audio.bpm; None where it has one."""
    out = preset.output
    if out.loop_bars is None or out.bpm is not None:
        return None
    if preset.audio is None:
        return (
            "output.loop_bars needs a tempo: set output.bpm, or add an audio section (its sound "
            "file's detected tempo, or audio.bpm)"
        )
    if analysis is not None and analysis.bpm is None:
        return (
            "output.loop_bars: the track has no tempo to count bars in (no onsets): set output.bpm "
            "or audio.bpm"
        )
    return None


def musical_step(form: Musical, preset, analysis: Analysis) -> int:
    """The step of a keyframe in beats or bars: its time t = first beat + beats * 60 / bpm (a bar
    is BEATS_PER_BAR beats) as the step warmup + t * fps * steps_per_frame (frame f's time [f /
    fps, (f + 1) / fps) is made by the steps after warmup + f * steps_per_frame), rounded half to
    even, at least 0."""
    beats = form.length * (features.BEATS_PER_BAR if form.unit == "bars" else 1)
    seconds = analysis.offset + beats * 60 / analysis.bpm
    run = preset.run
    return max(0, run.warmup + round(seconds * preset.output.fps * run.steps_per_frame))


def curve(value: Resolved, shares: list[Fraction], starts: list[int]) -> list[tuple[int, Fraction]]:
    """Hold keyframes (step, value) of a frame's shares: one where the value changes."""
    keys: list[tuple[int, Fraction]] = []
    for step, share in zip(starts, shares):
        v = value.value(share)
        if not keys or keys[-1][1] != v:
            keys.append((step, v))
    return keys


def describe(preset) -> dict | None:
    """The sidecar's `audio`: the sound file, its PCM's sha256 and length, the tempo and first
    beat, and each followed key's curve summary; None without an audio section."""
    audio = preset.audio
    if audio is None:
        return None
    try:
        analysis = analysis_of(preset)
    except ValueError:
        return None
    out = {
        "path": preset.portable_path(audio.path) if audio.path else None,
        "pcm": None
        if analysis.pcm_sha256 is None
        else {
            "sha256": analysis.pcm_sha256,
            "rate": RATE,
            "samples": analysis.samples,
            "seconds": round(analysis.samples / RATE, 3),
            "format": "16-bit mono",
        },
        "bpm": None if analysis.bpm is None else float(analysis.bpm),
        "first_beat": float(analysis.offset),
        "fps": analysis.fps,
        "keys": {path: summary(value) for path, value in preset.schedules if isinstance(value, Resolved)},
    }
    return out


def summary(value: Resolved) -> dict:
    """A resolved key's curve in brief: its source, range, changes, least, mean and most values."""
    curve_ = value.resolved(0)
    values = [v for _, v in curve_]
    source = f"audio {value.audio}" if isinstance(value, Follow) else f"{value.wave} every {value.period}"
    return {
        "follows": source,
        "range": list(value.range),
        "changes": len(curve_),
        "least": float(min(values)),
        "mean": round(float(sum(values) / len(values)), 4),
        "most": float(max(values)),
    }


def validate_lines(preset) -> list[str]:
    """What `physarum validate` shows of a preset's soundtrack and resolved keys: the track (its
    length, tempo and first beat), then each followed or periodic key's curve in brief and as a
    line of characters over the run (least value ' ', most '@')."""
    keys = [(path, value) for path, value in preset.schedules if isinstance(value, Resolved)]
    lines = []
    described = describe(preset)
    if described is not None:
        tempo = "no tempo" if described["bpm"] is None else f"{described['bpm']:g} bpm"
        given = preset.audio.bpm is not None
        length = "" if described["pcm"] is None else f"{described['pcm']['seconds']:g} s, "
        source = described["path"] or "no sound file"
        lines.append(
            f"    audio: {source}: {length}{tempo}{' (given)' if given else ' (detected)'}, "
            f"first beat at {described['first_beat']:.3f} s"
        )
    for path, value in keys:
        brief = summary(value)
        lines.append(
            f"    {path}: {brief['follows']} in {brief['range']}: {brief['changes']} values, "
            f"least {brief['least']:g}, mean {brief['mean']:g}, most {brief['most']:g}"
        )
        lines.append(f"      |{sparkline(value, preset.end_step)}|")
    return lines


def frame_values(preset) -> dict[str, list[Fraction]]:
    """Each followed or periodic key's resolved value at each frame of the run, by dotted key:
    frame f's value (the one the steps that make it, from the second on, and its look use; the
    curve's hold keyframes, docs/audio.md "Timing"), exact. Empty for a preset without one."""
    starts = frame_steps(preset.run)
    return {
        path: [value.at(step) for step in starts]
        for path, value in preset.schedules
        if isinstance(value, Resolved)
    }


def source_of(value: Resolved) -> str:
    """What a resolved key follows, in words: 'audio bass, attack 20ms, release 300ms' or 'sine
    every 2 bars'."""
    if isinstance(value, Wave):
        return f"{value.wave} every {value.period}" + (f", phase {value.phase:g}" if value.phase else "")
    timing = [f"{name} {float(milliseconds(getattr(value, name))):g}ms" for name in ("attack", "release")]
    return ", ".join([f"audio {value.audio}", *timing])


def plot_curves(preset, path: Path) -> None:
    """A PNG of the preset's resolved curves (`frame_values`): one panel a key, its value a frame
    against the track's time (frame f at f / fps seconds), held through the frame, the range's
    two ends dashed; the bars' first beats marked where a tempo is known. The file is written
    whole (base/files.stage). ValueError where the preset has no followed or periodic key."""
    values = frame_values(preset)
    if not values:
        raise ValueError(f"{preset.name} has no followed or periodic keys: nothing to plot")
    problem = plot_path_problem(path)
    if problem:
        raise ValueError(problem)
    figure = _figure(preset, values)
    partial = stage(
        path, lambda file: figure.savefig(file, format="png", dpi=100, metadata={"Software": None})
    )
    partial.commit()


def plot_path_problem(path: Path) -> str | None:
    """Why a plot cannot be written at `path` (no .png name, a folder there, a missing folder)."""
    if path.suffix.lower() != ".png":
        return f"{path}: a plot is a PNG file: give a name ending in .png"
    if path.is_dir():
        return f"{path} is a folder: give a file name ending in .png"
    if not path.parent.is_dir():
        return f"{path}: no folder {path.parent} to write it in"
    return None


def _figure(preset, values: dict[str, list[Fraction]]):
    from matplotlib.figure import Figure  # start-up: matplotlib only for a plot

    fps, schedules = preset.output.fps, dict(preset.schedules)
    figure = Figure(figsize=(9, 1.1 + 1.3 * len(values)), layout="constrained")
    axes = figure.subplots(len(values), 1, sharex=True, squeeze=False)[:, 0]
    times = [f / fps for f in range(len(next(iter(values.values()))) + 1)]
    bars = _bar_times(preset, times[-1])
    for ax, (path, curve) in zip(axes, values.items()):
        value = schedules[path]
        ax.stairs([float(v) for v in curve], times, baseline=None, color="#b5179e", linewidth=1.2)
        for end in value.range:
            ax.axhline(end, color="#999999", linewidth=0.6, linestyle="--")
        for bar in bars:
            ax.axvline(bar, color="#dddddd", linewidth=0.6, zorder=0)
        ax.set_ylabel(path.split(".")[-1], fontsize=9)
        ax.set_title(f"{path}: {source_of(value)}, range {list(value.range)}", fontsize=9, loc="left")
        ax.tick_params(labelsize=8)
    axes[-1].set_xlabel("seconds (frame f at f / fps)" + ("; grey: bars" if bars else ""), fontsize=9)
    axes[-1].set_xlim(0, times[-1])
    figure.suptitle(f"{preset.name}: resolved curves at {fps} fps", fontsize=10)
    return figure


def _bar_times(preset, end: float) -> list[float]:
    """The times of the bars' first beats within `end` seconds, where the preset has a tempo."""
    try:
        analysis = analysis_of(preset)
    except ValueError:
        return []
    if analysis is None or analysis.bpm is None:
        return []
    bar = float(features.BEATS_PER_BAR * 60 / analysis.bpm)
    first = float(analysis.offset)
    return [first + k * bar for k in range(int((end - first) / bar) + 1)] if bar > 0 else []


SPARK = " .:-=+*#%@"


def sparkline(value: Resolved, end: int, width: int = 60) -> str:
    """The curve in `width` characters (each the value at its step, from the range's first to
    its second value), for `physarum validate`."""
    low, high = sorted(Fraction(v) for v in value.range)
    span = (high - low) or Fraction(1)
    chars = []
    for i in range(width):
        step = i * end // max(1, width - 1)
        share = (value.at(step) - low) / span
        chars.append(SPARK[min(len(SPARK) - 1, int(share * (len(SPARK) - 1) + Fraction(1, 2)))])
    return "".join(chars)


__all__ = [
    "FEATURES",
    "FULL",
    "Audio",
    "Track",
    "analysis_of",
    "decode",
    "describe",
    "frame_values",
    "plot_curves",
]
__all__ += ["resolve"]
