"""An MP4's soundtrack (docs/audio.md): the audio section's sound file as the MP4's audio stream,
in sync with the frames.

Where the file's first audio stream is already of a codec MP4 holds (COPIED: AAC, MP3, ALAC,
Opus) its packets are copied as they are (no re-encoding, the file's own timestamps and codec
parameters); otherwise (FLAC, Vorbis, PCM, ...) it is decoded and encoded as AAC (FFmpeg's own
`aac` encoder in PyAV's pinned wheel, AAC_BITRATE) at the file's rate and channels where AAC
takes them (else 48000 Hz through PyAV's resampler), mono or stereo (more channels mixed to two). The stream starts with the first frame
(time 0 of the track is the first frame's time) and ends with the video: packets are muxed as
the frames come, each once the frames reach its start, and those starting at or after the
last frame's end are left out, so sound and picture end within one audio packet (about 23 ms
for AAC at 44.1 kHz). The bytes of an encoded soundtrack are those of the pinned encoder build,
like the video's (docs/outputs.md, "Which bytes are promised").
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction

from ..base import lazy

# start-up: loaded at first use (base/lazy.py)
av = lazy.module("av")
np = lazy.module("numpy")

COPIED = ("aac", "mp3", "mp3float", "alac", "opus")  # codecs an MP4 holds: copied without re-encoding
AAC_RATES = (96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350)
AAC_BITRATE = 192_000
AAC_FALLBACK_RATE = 48000
# The demuxers a sound file is read with (FFmpeg's format_whitelist): WAV, FLAC, MP3, M4A/AAC,
# OGG and their near kin. Without it FFmpeg probes every demuxer, and some read other files that
# the sound file names (concat: `ffconcat version 1.0` / `file other.wav`; hls, dash), so a file
# from a stranger (a preset's sound, a --from file's carried sound) could read any file below
# the working folder into the curves and the MP4.
SOUND_DEMUXERS = "wav,w64,flac,mp3,mov,ogg,aac,aiff,caf,matroska"


def read_sound(source: str | bytes):
    """A sound file (its path or bytes) opened for reading by PyAV with SOUND_DEMUXERS only;
    PyAV's error (an FFmpegError) for a file none of them reads."""
    opened = io.BytesIO(source) if isinstance(source, bytes) else source
    return av.open(opened, mode="r", options={"format_whitelist": SOUND_DEMUXERS})


@dataclass(frozen=True)
class Soundtrack:
    """The sound an MP4 carries: the sound file (its path, or its bytes where an output carried
    them) and its name for messages."""

    source: str | bytes = field(repr=False)
    name: str


class SoundMuxer:
    """The soundtrack's packets into an MP4 `container` being written: `add` makes its stream
    (before the first packet is muxed), `until(seconds)` muxes the packets that start before
    `seconds`, `close` the input."""

    def __init__(self, soundtrack: Soundtrack):
        source = soundtrack.source
        self.input = read_sound(source)
        self.source = self.input.streams.audio[0]
        self.copy = self.source.codec_context.name in COPIED
        self.stream = None
        self.packets: Iterator | None = None
        self.waiting = None  # the next packet, read but not yet muxed

    def add(self, container) -> None:
        if self.copy:
            self.stream = container.add_stream_from_template(self.source)
            self.packets = self._copied()
        else:
            context = self.source.codec_context
            rate = context.sample_rate if context.sample_rate in AAC_RATES else AAC_FALLBACK_RATE
            layout = "mono" if context.channels == 1 else "stereo"  # more channels: mixed to two
            self.stream = container.add_stream("aac", rate=rate)
            self.stream.layout = layout
            self.stream.bit_rate = AAC_BITRATE
            self.stream.codec_context.time_base = Fraction(1, rate)
            self.resampler = av.AudioResampler(format="fltp", layout=layout, rate=rate, frame_size=1024)
            self.packets = self._encoded()

    def _copied(self) -> Iterator:
        for packet in self.input.demux(self.source):
            if packet.dts is None or packet.pts is None:
                continue
            packet.stream = self.stream
            yield packet

    def _encoded(self) -> Iterator:
        samples = 0
        for frame in self.input.decode(self.source):
            for out in self.resampler.resample(frame):
                out.pts, samples = samples, samples + out.samples
                yield from self.stream.encode(out)
        for out in self.resampler.resample(None):
            out.pts, samples = samples, samples + out.samples
            yield from self.stream.encode(out)
        yield from self.stream.encode(None)

    def until(self, container, seconds: Fraction) -> None:
        """Mux the packets that start before `seconds` (the time of the frames written so far)."""
        while True:
            if self.waiting is None:
                self.waiting = next(self.packets, None)
                if self.waiting is None:
                    return
            packet = self.waiting
            if packet.pts is not None and packet.pts * packet.time_base >= seconds:
                return
            container.mux(packet)
            self.waiting = None

    def close(self) -> None:
        self.input.close()


def open_sound(soundtrack: Soundtrack) -> SoundMuxer:
    """The muxer of a soundtrack; ValueError naming the file where it cannot be read."""
    try:
        muxer = SoundMuxer(soundtrack)
    except (av.error.FFmpegError, OSError, IndexError) as error:
        raise ValueError(f"{soundtrack.name}: the soundtrack cannot be read ({error})") from None
    return muxer
