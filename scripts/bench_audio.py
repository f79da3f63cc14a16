"""Time the soundtrack's cost (docs/audio.md, "Cost"; issue 36): the feature extraction of a
track, and the simulation of a preset whose values follow the track (changing every frame)
against the same preset with fixed values.

    python scripts/bench_audio.py [--seconds 180] [--preset veins] [--steps 2000] [--device cuda]
                                  [--out FILE.json]

The track: scripts/make_soundtracks.py's pulse pattern repeated to --seconds, stereo 44100 Hz
FLAC (a common file), written to a temporary folder. "extraction": decoding, mixing, resampling
and every feature (render/preset/audio.py read_track + audio_features.analyse), once cold, the
median of three. "simulation": --steps steps of the preset from a fresh spawn (CUDA
synchronised), warmed up once, the median of three, fixed against deposit, decay and
sensor_angle following bass, onset and loudness (new tables every frame).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import av
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_soundtracks import TRACKS, pattern  # noqa: E402

from physarum.render.preset import audio, audio_features, load_preset  # noqa: E402
from physarum.render.preset.catalog import resolve_preset_path  # noqa: E402
from physarum.render.run.machine import device_name, resolve_backend, resolve_device  # noqa: E402
from physarum.render.sim.simulation import make_simulation  # noqa: E402

FOLLOWING = [
    "model.deposit={audio: bass, range: [3, 7], attack: 10ms, release: 200ms}",
    "model.decay={audio: onset, range: [0.03, 0.08], release: 150ms}",
    "model.sensor_angle={audio: loudness, range: [40, 80], release: 300ms}",
]


def write_track(path: Path, seconds: int) -> Path:
    """The pulse pattern, repeated to `seconds`, as stereo 44100 Hz FLAC."""
    loop = pattern(**TRACKS["pulse"]).astype(np.int64)
    mono = np.resize(loop, seconds * audio_features.RATE)
    stereo = np.repeat(mono, 2)  # 22050 -> 44100 by repetition, two equal channels
    samples = np.stack((stereo, stereo), axis=1).reshape(1, -1).astype(np.int16)  # interleaved
    with av.open(str(path), "w", format="flac") as out:
        stream = out.add_stream("flac", rate=44100)
        stream.layout, stream.format = "stereo", "s16"
        for start in range(0, samples.shape[1] // 2, 8192):
            chunk = samples[:, 2 * start : 2 * (start + 8192)].copy()
            frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout="stereo")
            frame.sample_rate, frame.pts = 44100, start
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return path


def extraction(path: Path, fps: int) -> list[float]:
    times = []
    for _ in range(3):
        audio._TRACKS.clear()
        began = time.perf_counter()
        track = audio.read_track(str(path))
        audio_features.analyse(track.pcm, fps)
        times.append(time.perf_counter() - began)
    return times


def simulation_seconds(preset, backend: str, device, steps: int) -> tuple[float, int]:
    simulation = make_simulation(preset, backend, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    began = time.perf_counter()
    simulation.advance(steps)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - began, getattr(simulation, "retunes", 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=180)
    parser.add_argument("--preset", default="veins")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--device")
    parser.add_argument("--out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        track = write_track(Path(folder) / "track.flac", args.seconds)
        times = extraction(track, 30)
        print(f"extraction of a {args.seconds} s track (stereo 44100 Hz FLAC) at 30 fps: {times} s")
        document = {"seconds": args.seconds, "extraction_s": times}
        if args.steps:
            device = resolve_device(args.device)
            backend = resolve_backend("auto", device)
            base = [f"run.steps={args.steps}", f"audio.path={track}"]
            rows = []
            for case, settings in (("fixed", []), ("following", FOLLOWING)):
                preset = load_preset(resolve_preset_path(args.preset), [*base, *settings])
                simulation_seconds(preset, backend, device, args.steps)
                runs = [simulation_seconds(preset, backend, device, args.steps) for _ in range(3)]
                median = statistics.median(t for t, _ in runs)
                rows.append({"case": case, "ms_per_step": 1e3 * median / args.steps, "retunes": runs[0][1]})
            rows[1]["slowdown"] = rows[1]["ms_per_step"] / rows[0]["ms_per_step"]
            print(f"{args.preset} on {device_name(device)} ({backend}), {args.steps} steps: {rows}")
            document.update(preset=args.preset, device=device_name(device), backend=backend, rows=rows)
    if args.out:
        Path(args.out).write_text(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
