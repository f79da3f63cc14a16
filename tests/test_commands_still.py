"""`physarum still` and physarum.still (render/commands/still.py): the still at step N is the
still a render with run.steps = N makes (pixels read back by FFmpeg, which wrote neither), at any
size the frame under each pixel; its files repeat; bad steps, sizes and prints are one message
and exit 2 through the command, the same RenderError through the API, and nothing is written;
too large a still names the largest size that fits."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction

import av
import numpy as np
import pytest
from PIL import Image

import physarum
from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from physarum.render.commands import still as stills
from physarum.render.formats.still import still_bytes, still_fits
from physarum.render.preset import build_preset
from physarum.render.run import runner
from support import tiny_data, write_preset

LOOK = {"bloom": 0.3, "curve": "aces", "grain": 0.2}


def still_data(look=True, steps=24, **output):
    data = tiny_data(output={"formats": ["png"], **output})
    data["run"]["steps"] = steps
    if look:
        data["look"] = dict(LOOK)
    return data


def picture(path, fmt: str) -> np.ndarray:
    with av.open(str(path)) as container:
        return next(container.decode(video=0)).to_ndarray(format=fmt)


def command(preset_file, out, *flags) -> int:
    argv = ["still", str(preset_file), "--out", str(out), "--quiet", "--backend", "torch", "--device", "cpu"]
    return main([*argv, *flags])


@pytest.fixture(scope="module")
def preset_file(tmp_path_factory):
    return write_preset(tmp_path_factory.mktemp("preset"), still_data(), "tiny.yaml")


def test_the_still_at_step_n_is_the_render_s_still_with_run_steps_n(tmp_path, preset_file):
    assert command(preset_file, tmp_path / "a", "--step", "14", "--size", "144", "--dpi", "300") == 0
    files = {f: tmp_path / "a" / "tiny" / f"tiny-s3-step14-144x96.{f}" for f in ("png", "tiff", "exr")}
    rendered = build_preset(still_data(steps=14, still={"scale": 3, "dpi": 300}), "t.yaml")
    runner.render(rendered, backend="torch", device="cpu", out_dir=tmp_path / "r", quiet=True)
    for fmt, kind in (("png", "rgb48le"), ("tiff", "rgb48le"), ("exr", "grayf32le")):
        made = picture(files[fmt], kind)
        assert np.array_equal(made, picture(tmp_path / "r" / "tiny" / f"tiny-s3-still.{fmt}", kind)), fmt
    full = build_preset(still_data(still={"scale": 3}), "t.yaml")  # the last step is another picture
    runner.render(full, backend="torch", device="cpu", out_dir=tmp_path / "f", quiet=True)
    assert not np.array_equal(
        picture(files["png"], "rgb48le"), picture(tmp_path / "f/tiny/tiny-s3-still.png", "rgb48le")
    )
    with Image.open(files["png"]) as image:
        assert tuple(round(v) for v in image.info["dpi"]) == (300, 300)
        assert "steps: 14" in image.info["physarum"]  # the preset `render --from` renders to it


def test_any_size_is_the_frame_under_each_pixel_and_the_files_repeat(tmp_path, preset_file):
    for folder in ("a", "b"):
        assert command(preset_file, tmp_path / folder, "--size", "100") == 0
    names = [f"tiny-s3-step24-100x67.{f}" for f in ("png", "tiff", "exr")]
    for name in names:
        assert (tmp_path / "a/tiny" / name).read_bytes() == (tmp_path / "b/tiny" / name).read_bytes()
    assert command(preset_file, tmp_path / "one") == 0  # no size: the frame's own
    frame = picture(tmp_path / "one/tiny/tiny-s3-step24-48x32.png", "rgb48le")
    big = picture(tmp_path / "a/tiny" / names[0], "rgb48le")
    rows, cols = np.arange(67) * 32 // 67, np.arange(100) * 48 // 100
    assert big.shape == (67, 100, 3) and np.array_equal(big, frame[rows[:, None], cols[None, :]])


def test_without_a_look_the_png_s_colour_and_no_exr(tmp_path):
    data = still_data(look=False)
    path = write_preset(tmp_path, data, "tiny.yaml")
    assert command(path, tmp_path / "s", "--step", "9", "--size", "96") == 0
    assert sorted(p.suffix for p in (tmp_path / "s/tiny").glob("tiny-*")) == [".png", ".tiff"]
    data["run"]["steps"] = 9
    result = runner.render(
        build_preset(data, "t.yaml"), backend="torch", device="cpu", out_dir=tmp_path / "r", quiet=True
    )
    last = np.asarray(Image.open(result.outputs["png"]).convert("RGB")).astype(np.uint16) * 257
    made = picture(tmp_path / "s/tiny/tiny-s3-step9-96x64.png", "rgb48le")
    assert np.array_equal(made, np.repeat(np.repeat(last, 2, axis=0), 2, axis=1))


def test_a_print_size_at_a_dpi(tmp_path, preset_file):
    assert command(preset_file, tmp_path, "--print", "4x3in", "--dpi", "100", "--formats", "png") == 0
    (path,) = (tmp_path / "tiny").glob("tiny-*")
    assert path.name == "tiny-s3-step24-400x267.png"  # 48x32 within 400x300, the long side whole
    with Image.open(path) as image:
        assert image.size == (400, 267) and tuple(round(v) for v in image.info["dpi"]) == (100, 100)


BAD = [
    (["--step", "0"], "--step: a step from 1 to 24"),
    (["--step", "25"], "--step: a step from 1 to 24"),
    (["--size", "47"], "--size: the still's long side in pixels, from the frame's 48"),
    (["--print", "1x1cm", "--dpi", "72"], "at least --dpi 121 at this size"),
    (["--print", "30x40"], "is not a print size; write WIDTHxHEIGHT and a unit: mm, cm or in"),
    (["--print", "30x40cm", "--dpi", "0"], "--dpi: a whole number from 1 to 4800"),
    (["--formats", "png,jpg"], "--formats: 'jpg'; a still's formats are png, tiff, exr"),
]


@pytest.mark.parametrize("flags, message", BAD, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_a_bad_still_is_one_message_exit_2_and_nothing_written(tmp_path, capsys, preset_file, flags, message):
    assert command(preset_file, tmp_path / "out", *flags) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0], err
    assert not (tmp_path / "out").exists()
    api = {
        "--step": "step",
        "--size": "size",
        "--print": "print_size",
        "--dpi": "dpi",
        "--formats": "formats",
    }
    kwargs = {}
    for flag, value in zip(flags[::2], flags[1::2]):
        typed = value.split(",") if flag == "--formats" else value if flag == "--print" else int(value)
        kwargs[api[flag]] = typed
    preset = build_preset(still_data(), "t.yaml")
    with pytest.raises(RenderError) as refused:
        physarum.still(preset, out=tmp_path / "api", backend="torch", device="cpu", **kwargs)
    assert message in str(refused.value) and not (tmp_path / "api").exists()


def test_a_still_too_large_names_the_largest_size_that_fits():
    preset = build_preset(still_data(), "t.yaml")
    available = still_bytes(2000, 1333) + 10  # room for a 2000 x 1333 still, a little more
    call = stills.StillCall(out="unused", size=5000)
    with pytest.raises(
        RenderError, match=r"takes about .* GiB of memory.*: at most --size (\d+) fits"
    ) as refused:
        stills.check(preset, call, available)
    largest = int(str(refused.value).split("at most --size ")[1].split()[0])
    sizes = [stills.fitted((48, 32), (Fraction(side), Fraction(side))) for side in (largest, largest + 1)]
    fits = [still_fits(*size, ("png", "tiff", "exr"), available) for size in sizes]
    assert fits == [True, False]
    stills.check(preset, stills.StillCall(out="unused", size=largest), available)  # that one passes
    printed = stills.StillCall(out="unused", print_size="100x100cm", dpi=300)
    with pytest.raises(RenderError, match=r"at most --dpi \d+ at 100x100cm fits here"):
        stills.check(preset, printed, available)


def exr_opens(width: int, height: int) -> bool:
    """Whether FFmpeg's exr encoder opens a width x height picture (the limit stills.check names)."""
    codec = av.CodecContext.create("exr", "w")
    codec.width, codec.height, codec.pix_fmt, codec.time_base = width, height, "grayf32le", 1
    try:
        codec.open()
    except av.error.FFmpegError:
        return False
    return True


def test_a_still_no_file_can_hold_names_the_largest_that_can():
    preset = build_preset(still_data(), "t.yaml")
    exr = stills.StillCall(out="unused", size=20000, formats=("exr",))
    with pytest.raises(
        RenderError, match=r"cannot be written as exr \(FFmpeg opens no larger EXR\)"
    ) as refused:
        stills.check(preset, exr, 1 << 40)
    assert not exr_opens(20000, 13333)
    largest = int(str(refused.value).split("at most --size ")[1].split()[0])
    sizes = [stills.fitted((48, 32), (Fraction(side), Fraction(side))) for side in (largest, largest + 1)]
    assert [exr_opens(*size) for size in sizes] == [True, False]  # FFmpeg's own limit, named
    assert stills.check(preset, stills.StillCall(out="unused", size=20000, formats=("png",)), 1 << 40)
    both = stills.StillCall(out="unused", size=20000, formats=("png", "exr"))
    with pytest.raises(RenderError, match=r"at most --size \d+ fits here .*, or --formats png at this size"):
        stills.check(preset, both, 1 << 40)


def test_a_refused_still_loads_no_torch(tmp_path, preset_file):
    code = (
        "import sys\nfrom physarum.render.cli.main import main\n"
        f"code = main(['still', {str(preset_file)!r}, '--step', '0', '--out', {str(tmp_path)!r}])\n"
        "print(code, [m for m in ('torch', 'av') if m in sys.modules], file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "2 []", done.stderr


def test_3d_species_and_heading_presets_are_refused(tmp_path):
    data = still_data(look=False)
    data["palette"]["layer"] = "heading"
    preset = build_preset(data, "t.yaml")
    with pytest.raises(RenderError, match="physarum still is for a 2D trail's frames"):
        physarum.still(preset, out=tmp_path)
    assert not any(tmp_path.iterdir())
