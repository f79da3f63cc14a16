"""Print stills (output.still, render/formats/still.py, render/look/still.py): the 16-bit PNG and
TIFF (pixels read by FFmpeg, profile and resolution by Pillow: neither wrote them) hold the last
frame's colour at the scale, with the sRGB profile and the DPI; the EXR holds the linear light;
the memory check refuses a still too large, naming the largest scale that fits."""

from __future__ import annotations

import io

import av
import numpy as np
import pytest
from PIL import Image, ImageCms

from physarum.render.base.errors import RenderError
from physarum.render.formats.still import check_still, srgb_profile, still_bytes
from physarum.render.out.sinks import FrameQueue
from physarum.render.preset import build_preset
from physarum.render.run import runner
from support import tiny_data


def still_preset(look=True, **still):
    data = tiny_data(output={"formats": ["png"], "still": {"scale": 3, "dpi": 300, **still}})
    if look:
        data["look"] = {"bloom": 0.3, "curve": "aces"}
    return build_preset(data, "t.yaml")


def av_picture(path, fmt: str) -> np.ndarray:
    with av.open(str(path)) as container:
        return next(container.decode(video=0)).to_ndarray(format=fmt)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("still")
    sink = FrameQueue("rgb", size=20)
    preset = still_preset()
    result = runner.render(preset, backend="torch", device="cpu", out_dir=out, quiet=True, sinks=[sink])
    frames = []
    while (frame := sink.get(timeout=1)) is not None:
        frames.append(frame)
    return result, frames[-1].rgb, out / "tiny"


def test_png_and_tiff_are_16_bit_with_profile_and_dpi(rendered):
    result, rgb, folder = rendered
    png = av_picture(folder / "tiny-s3-still.png", "rgb48le")
    tiff = av_picture(folder / "tiny-s3-still.tiff", "rgb48le")
    assert png.shape == (96, 144, 3) and np.array_equal(png, tiff)
    assert np.array_equal(png[::3, ::3], png[2::3, 2::3])  # each pixel repeated 3 x 3
    # the 16-bit colour is the 8-bit frame's before dithering: within one 8-bit step of it
    assert np.abs(png[::3, ::3].astype(int) / 257 - rgb).max() <= 1.01 * 255 / 64
    assert len(np.unique(png)) > len(np.unique(rgb))  # finer than 256 levels
    for name in ("tiny-s3-still.png", "tiny-s3-still.tiff"):
        with Image.open(folder / name) as image:
            profile = ImageCms.ImageCmsProfile(io.BytesIO(image.info["icc_profile"]))
            assert "sRGB" in ImageCms.getProfileDescription(profile)
            assert tuple(round(v) for v in image.info["dpi"]) == (300, 300)
    assert any(note.startswith("still: 144x96") for note in result.notes)


def test_exr_holds_the_linear_light(rendered):
    _, _, folder = rendered
    light = av_picture(folder / "tiny-s3-still.exr", "grayf32le")
    assert light.shape == (96, 144) and light.dtype == np.float32
    assert light.min() >= 0 and light.max() <= 16 and light.max() > 0.5
    assert np.array_equal(light * 4096, np.floor(light * 4096))  # whole 1/4096 steps


def test_the_profile_and_the_files_repeat(tmp_path, rendered):
    _, _, folder = rendered
    assert srgb_profile() == srgb_profile()
    again = runner.render(still_preset(), backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    for fmt in ("png", "tiff", "exr"):
        name = f"tiny-s3-still.{fmt}"
        assert (tmp_path / "tiny" / name).read_bytes() == (folder / name).read_bytes()
    assert again.outputs


def test_without_a_look_no_exr_and_the_8_bit_colour(tmp_path):
    preset = still_preset(look=False, scale=1)
    result = runner.render(preset, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    assert not (tmp_path / "tiny" / "tiny-s3-still.exr").exists()
    png = av_picture(tmp_path / "tiny" / "tiny-s3-still.png", "rgb48le")
    last = np.asarray(Image.open(result.outputs["png"]).convert("RGB"))
    assert np.array_equal(png, last.astype(np.uint16) * 257)


def test_memory_is_checked_before_work():
    preset = still_preset(scale=40)
    fits = max(k for k in range(1, 40) if still_bytes(48, 32, k) <= 10 << 20)
    with pytest.raises(RenderError, match=f"at most output.still.scale {fits}"):
        check_still(preset, 10 << 20)
    assert check_still(preset, 1 << 40)


def test_a_file_s_own_limit_is_checked_before_work():
    """FFmpeg opens no EXR past 16255 x 16255 (formats/still.py, format_fits): a 512 x 512 canvas
    at scale 64 is refused with the largest scale whose EXR FFmpeg opens, memory aside."""
    data = tiny_data(
        canvas={"width": 512, "height": 512},
        output={"formats": ["png"], "still": {"scale": 64, "formats": ["png", "exr"]}},
    )
    data["look"] = {"bloom": 0.3}
    preset = build_preset(data, "t.yaml")
    with pytest.raises(RenderError, match="cannot be written as exr .*: at most output.still.scale 31"):
        check_still(preset, 1 << 42)
    fits = []
    for side in (512 * 31, 512 * 32):
        codec = av.CodecContext.create("exr", "w")
        codec.width, codec.height, codec.pix_fmt, codec.time_base = side, side, "grayf32le", 1
        try:
            codec.open()
            fits.append(True)
        except av.error.FFmpegError:
            fits.append(False)
    assert fits == [True, False]  # FFmpeg's own answer at the scale named and one more
