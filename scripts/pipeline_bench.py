"""Render pipeline measurements (issue: the GPU never waits for the encoder).

1. Encoder throughput: frames per second of each format alone (GIF from index frames, MP4,
   PNG sequence) at 1024x1024 and 3840x2160, on frames prepared in memory beforehand.
2. Overlap: a 3840x2160 render of N frames to MP4 against encoding the same N frames alone.
3. 8K: a 7680x4320 render to MP4 and PNG.

Usage (on the GPU machine): python3 scripts/pipeline_bench.py [--frames 600] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from physarum.render.formats.contract import Frame
from physarum.render.formats.frames_dir import FramesDirSpec
from physarum.render.formats.gif import GifSpec
from physarum.render.formats.mp4 import Mp4Spec
from physarum.render.formats.registry import open_writer
from physarum.render.look.colour import Colourist
from physarum.render.preset import load_preset
from physarum.render.run.machine import resolve_backend, resolve_device
from physarum.render.run.runner import RenderOptions, render
from physarum.render.sim.simulation import make_simulation

ROOT = Path(__file__).resolve().parent.parent


def prepared_frames(preset, count: int, device) -> tuple[np.ndarray, np.ndarray, Colourist]:
    """count index and RGB frames of the preset, simulated and coloured, kept in host memory."""
    simulation = make_simulation(preset, resolve_backend("auto", device), device)
    colourist = Colourist(preset.palette)
    h, w = preset.canvas.height, preset.canvas.width
    index = np.empty((count, h, w), np.uint8)
    rgb = np.empty((count, h, w, 3), np.uint8)
    for f in range(count):
        simulation.advance(preset.run.steps_per_frame)
        frame = colourist.index_frame(simulation.trail[0])
        index[f] = frame.cpu().numpy()
        rgb[f] = colourist.rgb(frame, f).cpu().numpy()
    return index, rgb, colourist


def encoder_fps(preset, index, rgb, colourist, folder: Path) -> dict[str, float]:
    h, w = index.shape[1:]
    count, result = len(index), {}
    specs = {
        "gif": GifSpec(folder / "a.gif", w, h, 30, 0, "c", colourist.table(0).tobytes()),
        "mp4": Mp4Spec(folder / "a.mp4", w, h, 30, "c"),
        "png-sequence": FramesDirSpec(folder, "seq", "c"),
    }
    for name, spec in specs.items():
        writer = open_writer(spec)
        began = time.perf_counter()
        for f in range(count):
            writer.write(Frame(f, index[f], colourist.table(f), rgb[f]))
        writer.commit()
        result[name] = count / (time.perf_counter() - began)
        print(f"  {w}x{h} {name:<13} {result[name]:7.1f} frames/s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--fps-frames", type=int, default=60)
    parser.add_argument("--out", default="pipeline.json")
    parser.add_argument("--skip", default="", help="comma-separated parts to leave out: fps, 8k")
    args = parser.parse_args()
    device = resolve_device(None)
    report = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu", "encoder_fps": {}}
    uhd = load_preset(
        ROOT / "presets" / "panorama.yaml",
        [f"run.steps={args.frames * 2}", "run.steps_per_frame=2", "output.formats=[mp4]"],
    )
    square = load_preset(ROOT / "presets" / "veins.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        skip = set(filter(None, args.skip.split(",")))
        for preset in (square, uhd) if "fps" not in skip else ():
            index, rgb, colourist = prepared_frames(preset, args.fps_frames, device)
            size = f"{preset.canvas.width}x{preset.canvas.height}"
            report["encoder_fps"][size] = encoder_fps(preset, index, rgb, colourist, folder)
        # encoding alone: the same frames, prepared first, then only the MP4 encoder runs
        index, rgb, _ = prepared_frames(uhd, args.frames, device)
        writer = open_writer(Mp4Spec(folder / "alone.mp4", uhd.canvas.width, uhd.canvas.height, 30, "c"))
        began = time.perf_counter()
        for f, frame in enumerate(rgb):
            writer.write(Frame(f, rgb=frame))
        writer.commit()
        encode_alone = time.perf_counter() - began
        del index, rgb
        began = time.perf_counter()
        render(uhd, RenderOptions(out_dir=folder / "render", quiet=True))
        full = time.perf_counter() - began
        report["uhd_mp4"] = {
            "frames": args.frames,
            "encode_alone_s": encode_alone,
            "render_s": full,
            "ratio": full / encode_alone,
        }
        print(
            f"3840x2160 {args.frames} frames to MP4: render {full:.1f} s, encoding alone "
            f"{encode_alone:.1f} s, ratio {full / encode_alone:.3f}",
            flush=True,
        )
        if "8k" in skip:
            Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
            return
        eight_k = load_preset(
            ROOT / "presets" / "panorama.yaml",
            [
                "canvas.width=7680",
                "canvas.height=4320",
                "agents.count=33000000",
                "run.steps=60",
                "run.steps_per_frame=2",
                "output.formats=[mp4,png]",
                "name=panorama-8k",
            ],
        )
        began = time.perf_counter()
        result = render(eight_k, RenderOptions(out_dir=folder / "render", quiet=True))
        report["8k"] = {
            "seconds": time.perf_counter() - began,
            "bytes": {k: p.stat().st_size for k, p in result.outputs.items()},
        }
        print(f"7680x4320 30 frames to MP4 and PNG: {report['8k']}", flush=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
