"""The volume renderer's cost (render/look/volume.py): ms per frame at 1024^2 output from 256^3
and 512^3 trail volumes (synthetic tubes), nearest and trilinear, on each device asked for; the
GIF palette's share (reduce_rgb); and byte identity of CPU and CUDA frames at a medium size.

    python3 scripts/bench_volume.py --device cuda --out $OUT/volume.json    # H200: about 3-5 min
    python scripts/bench_volume.py --device cpu --sides 64 --size 256       # a CPU: small only

Prints one line per case and writes the results as JSON (--out).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import torch

from physarum.render.look.camera import default_samples, view
from physarum.render.look.colour import Colourist
from physarum.render.look.volume import alpha_table, reduce_rgb, render_volume
from physarum.render.preset.camera import Camera
from physarum.render.preset.output_sections import Palette


def tubes(side: int, device: torch.device) -> torch.Tensor:
    """[side]^3 float32: three Gaussian tubes and a faint haze, a stand-in for a trail."""
    axis = torch.arange(side, device=device, dtype=torch.float32)
    z, y, x = axis[:, None, None], axis[None, :, None], axis[None, None, :]
    c, w = side / 2, side / 16
    trail = torch.exp(-((x - c) ** 2 + (y - c) ** 2) / (2 * w * w))
    trail = trail + torch.exp(-((y - 0.6 * c) ** 2 + (z - c) ** 2) / (2 * w * w))
    trail = trail + torch.exp(-((x - 1.4 * c) ** 2 + (z - 0.7 * c) ** 2) / (2 * w * w))
    return trail + 0.01


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def frame_ms(
    levels, camera, colours, alpha, size, frames: int, mode: str, kernel: bool
) -> tuple[float, float, torch.Tensor]:
    """(ms per frame rendering, ms per frame of reduce_rgb, the last frame) over `frames` orbit frames."""
    device = levels.device
    render_s = reduce_s = 0.0
    image = None
    for number in range(frames + 1):  # frame 0 warms up
        v = view(camera, tuple(levels.shape), size, number, frames)
        sync(device)
        start = time.perf_counter()
        image = render_volume(levels, v, colours, alpha, (0, 0, 0), mode, kernel=kernel)
        sync(device)
        middle = time.perf_counter()
        reduce_rgb(image)
        sync(device)
        if number:
            render_s += middle - start
            reduce_s += time.perf_counter() - middle
    return 1000 * render_s / frames, 1000 * reduce_s / frames, image


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--sides", default="256,512", help="volume sides, comma separated")
    parser.add_argument("--size", type=int, default=1024, help="output frame side")
    parser.add_argument("--frames", type=int, default=3)
    parser.add_argument("--modes", default="nearest,trilinear")
    parser.add_argument("--paths", default="kernel,torch", help="the Triton kernel, the torch code (CUDA)")
    parser.add_argument("--identity", type=int, default=128, help="CPU vs CUDA check's volume side (0: none)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    colourist = Colourist(Palette())
    colours = torch.from_numpy(colourist.table(0)).to(device)
    results = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu", "cases": []}
    for side in map(int, args.sides.split(",")):
        trail = tubes(side, device)
        levels = colourist.index_frame(trail)
        for mode, path in [(m, p) for m in args.modes.split(",") for p in args.paths.split(",")]:
            if path == "kernel" and device.type != "cuda":
                continue
            camera = Camera.model_validate(
                {"orbit": {"turns": 1, "elevation": 20}, "opacity": 0.1, "sample": mode}
            )
            alpha = torch.from_numpy(alpha_table(camera)).to(device)
            size = (args.size, args.size)
            kernel = path == "kernel"
            render_ms, reduce_ms, _ = frame_ms(
                levels, camera, colours, alpha, size, args.frames, mode, kernel
            )
            per_ray = default_samples((side, side, side))  # camera.samples unset: the diagonal
            samples = args.size * args.size * per_ray
            case = {
                "volume": side,
                "output": args.size,
                "mode": mode,
                "path": path,
                "samples_per_ray": per_ray,
                "render_ms": round(render_ms, 2),
                "reduce_rgb_ms": round(reduce_ms, 2),
                "gsamples_per_s": round(samples / render_ms / 1e6, 3),
            }
            if device.type == "cuda":
                case["peak_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
                torch.cuda.reset_peak_memory_stats(device)
            results["cases"].append(case)
            print(json.dumps(case), flush=True)
        del trail, levels
    if device.type == "cuda" and args.identity:
        results["identity"] = identity(args.identity, device, colourist)
        print(json.dumps(results["identity"]), flush=True)
    if args.out:
        with open(args.out, "w") as file:
            json.dump(results, file, indent=2)


def identity(side: int, device: torch.device, colourist: Colourist) -> dict:
    """sha256 of 4 orbit frames (each mode) rendered on the CPU and on `device`: equal or not."""
    trail = tubes(side, torch.device("cpu"))
    levels = colourist.index_frame(trail)
    colours = torch.from_numpy(colourist.table(0))
    found = {}
    for mode in ("nearest", "trilinear"):
        camera = Camera.model_validate(
            {"orbit": {"turns": 1, "elevation": 30}, "opacity": 0.1, "sample": mode}
        )
        alpha = torch.from_numpy(alpha_table(camera))
        digests = {"cpu": hashlib.sha256(), "cuda": hashlib.sha256()}
        for number in range(4):
            v = view(camera, tuple(levels.shape), (256, 192), number, 4)
            for name, dev in (("cpu", torch.device("cpu")), ("cuda", device)):
                image = render_volume(levels.to(dev), v, colours.to(dev), alpha.to(dev), (3, 2, 1), mode)
                index, palette = reduce_rgb(image)
                digests[name].update(
                    image.cpu().numpy().tobytes() + index.cpu().numpy().tobytes() + palette.tobytes()
                )
        found[mode] = "identical" if digests["cpu"].digest() == digests["cuda"].digest() else "DIFFERENT"
    return {"identity_volume": side, **found}


if __name__ == "__main__":
    main()
