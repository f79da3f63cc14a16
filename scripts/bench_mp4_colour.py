"""How much colour each MP4 setting keeps (issue 16, item 4): mean RGB PSNR against the exact frames,
file size and encoding time of every output.mp4 setting, and of yuv444p (a candidate for
browser-sharp that was not chosen: docs/benchmarks.md, "MP4 colour settings").

The exact frames are a render's PNG sequence (--frames-dir: the colours the GIF, WebP and PNG carry).
Each setting encodes them through mp4.Mp4Writer; each decoded frame (PyAV's rgb24 conversion, as
a player without colour management shows it) is compared with its exact frame: PSNR over the three
channels, averaged over the frames. A setting enlarged 2x is shrunk back by averaging each 2x2 block,
as a browser showing the video at the canvas's size does.

Usage: python3 scripts/bench_mp4_colour.py [--preset quickstart] [--set KEY=VALUE ...] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import av
import numpy as np
from PIL import Image

from physarum.render.formats import mp4
from physarum.render.formats.contract import Frame
from physarum.render.formats.mp4 import MP4_SETTINGS, Mp4Setting, Mp4Spec
from physarum.render.formats.registry import open_writer
from physarum.render.out.specs import output_stem
from physarum.render.preset import load_preset
from physarum.render.run.machine import host_cores
from physarum.render.run.runner import RenderOptions, render

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = {"yuv444p (not offered)": Mp4Setting("libx264", "yuv444p", 1, MP4_SETTINGS["browser"].options)}


def exact_frames(preset, folder: Path) -> np.ndarray:
    """[N, H, W, 3] uint8: every frame of the preset, exact (a PNG sequence)."""
    render(preset, RenderOptions(out_dir=folder, quiet=True, frames_dir=folder / "frames", device="cpu"))
    files = sorted((folder / "frames").glob(f"{output_stem(preset)}-*.png"))
    return np.stack([np.asarray(Image.open(path).convert("RGB")) for path in files])


def psnr(decoded: np.ndarray, exact: np.ndarray) -> float:
    mse = float(np.mean((decoded.astype(np.float64) - exact.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def decoded_frames(path: Path, scale: int, height: int, width: int):
    """The MP4's frames as rgb24, shrunk by scale (2x2 block means) and cropped to the canvas."""
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            rgb = frame.to_ndarray(format="rgb24")
            if scale > 1:
                h, w = rgb.shape[0] // scale, rgb.shape[1] // scale
                blocks = rgb[: h * scale, : w * scale].reshape(h, scale, w, scale, 3).astype(np.float64)
                rgb = np.round(blocks.mean(axis=(1, 3))).astype(np.uint8)
            yield rgb[:height, :width]


def measure(name: str, frames: np.ndarray, fps: int, folder: Path) -> dict:
    n, height, width = frames.shape[:3]
    path = folder / f"{name.split()[0]}.mp4"
    writer = open_writer(Mp4Spec(path, width, height, fps, "bench", name))
    began = time.perf_counter()
    for number in range(n):
        writer.write(Frame(number, rgb=frames[number]))
    writer.commit()
    seconds = time.perf_counter() - began
    values = [
        psnr(d, e) for d, e in zip(decoded_frames(path, MP4_SETTINGS[name].scale, height, width), frames)
    ]
    exact = int(sum(v == float("inf") for v in values))
    finite = [v for v in values if v != float("inf")]
    setting = MP4_SETTINGS[name]
    return {
        "setting": name,
        "codec": setting.codec,
        "pix_fmt": setting.pix_fmt,
        "scale": setting.scale,
        "psnr_db": round(float(np.mean(finite)), 2) if finite else "exact",
        "min_psnr_db": round(float(min(finite)), 2) if finite else "exact",
        "frames_exact": exact,
        "bytes": path.stat().st_size,
        "encode_s": round(seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="quickstart")
    parser.add_argument("--set", dest="settings", action="append", default=[])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    preset = load_preset(ROOT / "presets" / f"{args.preset}.yaml", args.settings)
    MP4_SETTINGS.update(CANDIDATES)  # measured beside the offered settings
    with tempfile.TemporaryDirectory() as tmp:
        frames = exact_frames(preset, Path(tmp))
        rows = [measure(name, frames, preset.output.fps, Path(tmp)) for name in MP4_SETTINGS]
    raw = int(frames.nbytes)
    result = {
        "preset": args.preset,
        "settings": args.settings,
        "frames": int(frames.shape[0]),
        "canvas": f"{frames.shape[2]}x{frames.shape[1]}",
        "raw_rgb_bytes": raw,
        "x264_threads": mp4.MP4_THREADS,
        "host": f"{host_cores()}-core {platform.machine()} {platform.processor() or ''}".strip(),
        "av_version": av.__version__,
        "rows": rows,
    }
    print(
        f"{'setting':24} {'codec':11} {'pix_fmt':8} {'x':>2} {'PSNR dB':>8} {'min':>7} {'MB':>7} {'enc s':>6}"
    )
    for r in rows:
        print(
            f"{r['setting']:24} {r['codec']:11} {r['pix_fmt']:8} {r['scale']:>2} {r['psnr_db']!s:>8} "
            f"{r['min_psnr_db']!s:>7} {r['bytes'] / 1e6:7.2f} {r['encode_s']:6.2f}"
        )
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
