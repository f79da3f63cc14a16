"""Transparency (output.alpha, render/formats/alpha.py, render/look/alpha.py): each format that keeps
an alpha channel, rendered from the tiny preset and decoded by a reader that did not write it
(PyAV/FFmpeg for what Pillow wrote, Pillow for what FFmpeg wrote; the animated WebP, which
FFmpeg does not decode, by Pillow), its alpha plane checked
against the frames' index (the trail's light) and its colour against the mode."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from physarum.render.base.errors import RenderError
from physarum.render.formats.alpha import join
from physarum.render.formats.registry import read_embedded
from physarum.render.out.sinks import FrameQueue
from physarum.render.preset import build_preset
from physarum.render.run import runner
from support import tiny_data

ALPHA_FORMATS = ["mov", "webm", "apng", "webp", "png"]


def alpha_preset(mode: str, formats=None, **output):
    data = tiny_data(
        output={"formats": formats or [*ALPHA_FORMATS, "mp4"], "alpha": mode, "fps": 20, "loop": 2, **output},
        look={"bloom": 0.4, "black": 0.3, "curve": "aces"},  # black: a transparent background
    )
    return build_preset(data, "tiny.yaml")


def render_with_frames(preset, out: Path, frames_dir: Path | None = None):
    """The render's files and the frames it handed over (RGB and alpha), caught by a sink."""
    sink = FrameQueue("rgba", size=2 * preset.frames + 2)  # a ping-pong loop shows frames twice
    result = runner.render(
        preset, backend="torch", device="cpu", out_dir=out, quiet=True, sinks=[sink], frames_dir=frames_dir
    )
    frames = []
    while (frame := sink.get(timeout=1)) is not None:
        frames.append(frame)
    return result, frames


def av_frames(path: Path, decoder: str | None = None, deep: bool = False) -> list[np.ndarray]:
    """Every frame of a file as RGBA, decoded by FFmpeg (the named decoder: libvpx's keeps VP9's
    alpha, which FFmpeg's own vp9 decoder drops). deep: converted to 16 bits a channel and
    rounded to 8 here (ProRes decodes to 12 bits, and swscale's 12-to-8-bit alpha rounds one
    level off the 8-bit value where its 16-bit one is exact)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        if deep:
            return [
                ((frame.to_ndarray(format="rgba64le").astype(np.uint32) + 128) // 257).astype(np.uint8)
                for frame in container.decode(stream)
            ]
        if decoder is None:
            return [frame.to_ndarray(format="rgba") for frame in container.decode(stream)]
        codec = av.CodecContext.create(decoder, "r")
        # demux ends with an empty packet, which flushes the decoder
        return [
            f.to_ndarray(format="rgba") for packet in container.demux(stream) for f in codec.decode(packet)
        ]


def pillow_frames(path: Path) -> list[np.ndarray]:
    with Image.open(path) as image:
        pictures = []
        for number in range(image.n_frames):
            image.seek(number)
            pictures.append(np.asarray(image.convert("RGBA")))
        return pictures


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    out = tmp_path_factory.mktemp("straight")
    result, frames = render_with_frames(alpha_preset("straight"), out, out / "frames")
    return result, frames, out


def test_alpha_is_the_light_with_the_look(straight):
    """The alpha plane is the index frame: the background transparent, bloom's glow in it."""
    _, frames, _ = straight
    assert len(frames) == alpha_preset("straight").frames
    for frame in frames:
        assert frame.alpha.shape == frame.rgb.shape[:2] and frame.alpha.dtype == np.uint8
    last = frames[-1].alpha
    assert last.min() == 0 and last.max() > 200  # transparent background, opaque bright trail


@pytest.mark.parametrize(
    ("fmt", "reader", "exact"),
    [
        ("png", lambda p: av_frames(p), True),  # Pillow wrote it, FFmpeg reads it
        # FFmpeg decodes no animated WebP (ANMF): Pillow reads it back through libwebp's demuxer and
        # decoder, the same library as its encoder: the one test here whose reader is not another's
        ("webp", pillow_frames, True),
        ("apng", pillow_frames, True),  # FFmpeg wrote it, Pillow reads it
        ("mov", lambda p: av_frames(p, deep=True), True),  # ProRes 4444's alpha is lossless
        ("webm", lambda p: av_frames(p, "libvpx-vp9"), False),  # VP9's alpha is lossy
    ],
)
def test_each_format_keeps_the_alpha(straight, fmt, reader, exact):
    result, frames, _ = straight
    decoded = reader(result.outputs[fmt])
    expected = frames[-1:] if fmt == "png" else frames
    assert len(decoded) == len(expected)
    for picture, frame in zip(decoded, expected, strict=True):
        alpha = picture[: frame.alpha.shape[0], : frame.alpha.shape[1], 3].astype(int)
        if exact:
            assert np.array_equal(alpha, frame.alpha)
        else:
            error = np.abs(alpha - frame.alpha)
            assert error.mean() < 4.0 and error.max() < 48  # CRF 20 on dithered 48x32 frames
            assert alpha[frame.alpha == 0].mean() < 2.0  # the background stays transparent
        if fmt in ("png", "apng", "webp"):  # lossless: straight colour is the opaque frame's
            shown = frame.alpha > 0
            assert np.array_equal(picture[..., :3][shown], frame.rgb[shown])
    assert "name: tiny" in read_embedded(result.outputs[fmt])


def test_frames_folder_is_rgba(straight):
    _, frames, out = straight
    pictures = sorted((out / "frames").glob("*.png"))
    assert len(pictures) == len(frames)
    first = av_frames(pictures[0])[0]
    assert np.array_equal(first[..., 3], frames[0].alpha)


def test_opaque_formats_are_noted(straight):
    result, _, _ = straight
    assert any("mp4" in note and "opaque" in note for note in result.notes)


def test_premultiplied_colour(tmp_path):
    result, frames = render_with_frames(alpha_preset("premultiplied", ["png", "apng"]), tmp_path)
    last = frames[-1]
    expected = (last.rgb.astype(int) * last.alpha[..., None] + 127) // 255
    assert np.array_equal(av_frames(result.outputs["png"])[0][..., :3], expected)
    assert np.array_equal(pillow_frames(result.outputs["apng"])[-1][..., :3], expected)
    assert np.array_equal(join(last.rgb, last.alpha, "premultiplied")[..., :3], expected)


def test_without_alpha_the_new_formats_are_opaque(tmp_path):
    data = tiny_data(output={"formats": ["mov", "webm", "apng"], "fps": 20})
    result = runner.render(
        build_preset(data, "t.yaml"), backend="torch", device="cpu", out_dir=tmp_path, quiet=True
    )
    for fmt in ("mov", "webm", "apng"):
        with av.open(str(result.outputs[fmt])) as container:
            stream = container.streams.video[0]
            assert "a" not in stream.codec_context.pix_fmt.replace("gray", "")[:4]  # no alpha plane
    assert pillow_frames(result.outputs["apng"])[0][..., 3].min() == 255


@pytest.mark.parametrize(
    ("sections", "why"),
    [
        ({"palette": {"names": ["magma"], "layer": "heading"}}, "hue"),
        ({"checkpoint": {"every": 6}}, "journal"),
        ({"output": {"formats": ["gif", "mp4"], "alpha": "straight"}}, "no format"),
    ],
)
def test_refused_before_work(tmp_path, sections, why):
    data = tiny_data(output={"formats": ["png"], "alpha": "straight"})
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    with pytest.raises(RenderError, match=why):
        runner.render(
            build_preset(data, "t.yaml"), backend="torch", device="cpu", out_dir=tmp_path, quiet=True
        )
    assert not (tmp_path / "tiny").exists() or not any((tmp_path / "tiny").iterdir())


def test_ping_pong_replays_the_alpha(tmp_path):
    result, frames = render_with_frames(alpha_preset("straight", ["apng"], loop_mode="ping-pong"), tmp_path)
    decoded = pillow_frames(result.outputs["apng"])
    assert len(decoded) == len(frames)
    shown = len(frames) // 2 + 1
    assert np.array_equal(decoded[shown][..., 3], decoded[shown - 2][..., 3])  # backwards again
