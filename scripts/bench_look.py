"""Colouring cost per frame: today's flat colouring against the HDR look (render/look/hdr.py).

Times Colourist.colour (index frame and RGB frame, as a render with an MP4 does) of a synthetic
trail (heavy-tailed, like a grown network's: most cells dim, a few bright), at 1024x1024 and
3840x2160, for the flat colourist (levels high: auto, as the curated presets), a light look (tone
curve and dithering) and a full look (bloom, vignette, grain, black point). Medians of --repeats
frames after warm-up, with the device synchronised around each frame.

    python scripts/bench_look.py --device cuda --out benchmarks/unreleased/look/bench_look_h200.json
    python scripts/bench_look.py --device cpu --repeats 3
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from physarum.render.look.colour import make_colourist
from physarum.render.preset.load import build_preset

SIZES = ((1024, 1024), (3840, 2160))
LOOKS = {
    "flat": None,
    "look-light": {"curve": "aces"},
    "look-full": {
        "curve": "aces",
        "bloom": 2.0,
        "bloom_radius": 0.06,
        "vignette": 0.4,
        "grain": 0.03,
        "black": 0.2,
    },
}


def synthetic_trail(width: int, height: int, device: torch.device) -> torch.Tensor:
    """[H, W] float32: exponential noise raised to a power (heavy-tailed), seeded."""
    generator = torch.Generator().manual_seed(1)
    noise = torch.rand(height, width, generator=generator, dtype=torch.float32)
    return ((-torch.log1p(-noise * 0.999)) ** 3).to(device)


def time_colouring(colourist, trail: torch.Tensor, repeats: int) -> float:
    """Median milliseconds of one colour(trail, frame, rgb=True)."""
    device = trail.device
    times = []
    for frame in range(repeats + 2):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        began = time.perf_counter()
        colourist.colour(trail, frame, True)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if frame >= 2:  # two warm-up frames: constants copied, kernels loaded
            times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, help="write the results as JSON here too")
    args = parser.parse_args()
    device = torch.device(args.device)
    rows = []
    for width, height in SIZES:
        trail = synthetic_trail(width, height, device)
        for name, look in LOOKS.items():
            data = {
                "name": "bench",
                "canvas": {"width": width, "height": height},
                "palette": {"names": ["magma"], "gamma": 0.8, "levels": {"high": "auto", "quantile": 0.995}},
            }
            if look is not None:
                data["look"] = look
            colourist = make_colourist(build_preset(data, "bench.yaml"))
            ms = time_colouring(colourist, trail, args.repeats)
            rows.append({"size": f"{width}x{height}", "colouring": name, "ms_per_frame": round(ms, 3)})
            print(f"{width}x{height}  {name:<11} {ms:9.3f} ms/frame", flush=True)
    result = {
        "device": torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else platform.processor() or "cpu",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "repeats": args.repeats,
        "rows": rows,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
