"""Cases of the output stage: time to each file (outputs), GIF encoding (gif), the colour each MP4
setting keeps (mp4-colour), encoder throughput and the 4K/8K pipeline (pipeline),
physarum.frames() streamed against a frames folder (stream), and whether each video codec's bytes
follow the CPU's instruction sets (codec-asm).

    python -m physarum.render.tools.harness case outputs --x264 4:slice,16:frame   # the GPU host
    python -m physarum.render.tools.harness case outputs --presets quickstart --device cpu --scale-down 2
    python -m physarum.render.tools.harness case gif --preset labyrinth --renders
"""

from __future__ import annotations

import io
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from physarum.render.tools.harness import case, synchronise

ROOT = Path(__file__).resolve().parents[2]


def _settings(text: str) -> list[str]:
    """KEY=VALUE settings separated by ';' (a value may hold commas: output.formats=[gif,png])."""
    return [part.strip() for part in text.split(";") if part.strip()]


def scaled_preset(path: Path, factor: int, settings: list[str]):
    """The preset with its canvas sides divided by factor and its agents by factor squared."""
    from physarum.render.preset import load_preset

    preset = load_preset(path, settings)
    if factor == 1:
        return preset
    shrink = [
        f"canvas.width={max(16, preset.canvas.width // factor)}",
        f"canvas.height={max(16, preset.canvas.height // factor)}",
        f"agents.count={max(1, preset.agents.count // factor**2)}",
    ]
    return load_preset(path, [*settings, *shrink])


def split_times(preset, backend: str, device) -> dict[str, float]:
    """Seconds simulating and seconds colouring (with the copies to the host) a whole render; on
    the CPU with the torch threads a render leaves itself (machine.share_cpu_with_encoders)."""
    from physarum.render.look.colour import make_colourist
    from physarum.render.run.machine import share_cpu_with_encoders
    from physarum.render.sim.simulation import make_simulation, simulation_maps

    if device.type == "cpu":
        share_cpu_with_encoders()
    started = time.perf_counter()
    simulation = make_simulation(preset, backend, device)
    simulation.advance(preset.run.warmup)
    synchronise(device)
    setup = time.perf_counter() - started
    colourist = make_colourist(preset)
    simulate = colour = 0.0
    remaining = preset.run.steps
    for number in range(preset.frames):
        began = time.perf_counter()
        steps = min(preset.run.steps_per_frame, remaining)
        simulation.advance(steps)
        remaining -= steps
        synchronise(device)
        between = time.perf_counter()
        index, rgb = colourist.colour(simulation_maps(preset, simulation.trail, 0), number, True)
        index.cpu(), rgb.cpu()
        synchronise(device)
        simulate += between - began
        colour += time.perf_counter() - between
    return {"setup_s": setup, "simulation_s": simulate, "colouring_s": colour}


def render_times(preset, folder: Path, device: str | None, formats: list[str] | None) -> dict:
    """A render's timings (seconds) and its outputs' sizes (bytes by format)."""
    from physarum.render.run.runner import RenderOptions, render

    if formats:
        preset = preset.model_copy(update={"output": preset.output.model_copy(update={"formats": formats})})
    result = render(preset, RenderOptions(out_dir=folder, quiet=True, device=device))
    sizes = {fmt: path.stat().st_size for fmt, path in result.outputs.items() if fmt != "json"}
    return {"timings": result.timings, "bytes": sizes}


def mp4_times(preset, folder: Path, device: str | None, spec: str) -> dict:
    """An MP4-only render with x264 threaded as spec (THREADS:slice or THREADS:frame) says."""
    from physarum.render.formats import mp4

    threads, _, kind = spec.partition(":")
    if kind not in ("slice", "frame"):
        raise SystemExit(f"--x264 {spec!r}: give THREADS:slice or THREADS:frame, e.g. 4:slice,16:frame")
    threads, sliced = int(threads), kind == "slice"
    saved = mp4.MP4_THREADS, mp4.MP4_SLICED_THREADS, mp4.MP4_LOOKAHEAD_THREADS
    mp4.MP4_THREADS, mp4.MP4_SLICED_THREADS = threads, sliced
    mp4.MP4_LOOKAHEAD_THREADS = threads if sliced else max(1, threads // 6)  # x264's own defaults
    try:
        return render_times(preset, folder / spec.replace(":", "-"), device, ["mp4"])
    finally:
        mp4.MP4_THREADS, mp4.MP4_SLICED_THREADS, mp4.MP4_LOOKAHEAD_THREADS = saved


@case(
    "outputs",
    presets="",
    device="",
    scale_down=1,
    set="",
    formats="",
    x264="",
    small={"presets": "quickstart", "scale_down": 4},
)
def outputs(run) -> None:
    """Time to a shareable file (issue 16): each curated preset's (all, or --presets a,b) render
    split into the simulation and the colouring alone (timed apart, synchronised after each, the
    frames copied to the host, no encoder), then rendered to its formats (or --formats) as
    `physarum render` does: time to every file (total_s), each encoder's busy time and each file's
    size; with --x264 4:slice,16:frame an MP4-only render per x264 threading. One row per preset
    and part; scripts/figures.py outputs draws them."""
    from physarum.render.formats import mp4
    from physarum.render.run.machine import host_cores, resolve_backend, resolve_device

    names = [n for n in run.presets.split(",") if n] or sorted(
        p.stem for p in (ROOT / "presets").glob("*.yaml")
    )
    device = resolve_device(run.device)
    backend = resolve_backend("auto", device)
    formats = [f for f in run.formats.split(",") if f] or None
    common = dict(cores=host_cores(), backend=backend, scale_down=run.scale_down)
    common["x264_threads"] = f"{mp4.MP4_THREADS}:{'slice' if mp4.MP4_SLICED_THREADS else 'frame'}"
    for name in names:
        try:
            preset = scaled_preset(ROOT / "presets" / f"{name}.yaml", run.scale_down, _settings(run.set))
            shape = dict(
                canvas=f"{preset.canvas.width}x{preset.canvas.height}",
                agents=preset.agents.count,
                steps=preset.run.steps,
                frames=preset.frames,
            )
            split = split_times(preset, backend, device)
            run.record(
                f"{name} simulation", split["simulation_s"], **shape, setup_s=round(split["setup_s"], 3)
            )
            run.record(f"{name} colouring", split["colouring_s"], **shape)
            with tempfile.TemporaryDirectory() as tmp:
                measured = render_times(preset, Path(tmp), run.device or None, formats)
                timings = {k: round(v, 3) for k, v in measured["timings"].items()}
                run.record(
                    f"{name} render",
                    timings["total_s"],
                    **shape,
                    **common,
                    timings=timings,
                    bytes=measured["bytes"],
                )
                for spec in [s for s in run.x264.split(",") if s]:
                    mp4_run = mp4_times(preset, Path(tmp), run.device or None, spec)
                    run.record(
                        f"{name} mp4 only, x264 {spec}",
                        mp4_run["timings"]["total_s"],
                        encode_mp4_s=mp4_run["timings"]["encode_mp4_s"],
                        mp4_bytes=mp4_run["bytes"]["mp4"],
                    )
        except Exception as error:  # one preset that cannot render here (memory, size) is recorded
            run.record(f"{name} error", error=f"{type(error).__name__}: {error}")


@case(
    "gif",
    preset="quickstart",
    set="",
    device="",
    processes=0,
    budgets="15MB,10MB,5MB,2MB",
    renders=False,
    small={"set": "canvas.width=128;canvas.height=128;agents.count=4000;run.steps=60", "budgets": "200KB"},
)
def gif(run) -> None:
    """GIF encoding on a preset's own index frames (docs/outputs.md, "GIF byte budgets"): the
    preset simulated once, its GIF index frames kept (zlib, as a budgeted render keeps them);
    serial (one process) and --processes workers (default: the cores), each from index frames as a
    render streams them and from the kept frames, the bytes checked equal; each budget's choice
    (its reduction, estimate and size), checked the same with 1 and N processes; with --renders,
    whole renders of the GIF alone unbudgeted and at the first budget (issue 16: at most 1.3x)."""
    from physarum.render.formats.gif import GifSpec
    from physarum.render.formats.gif_budget import Budgeter, FrameStore
    from physarum.render.formats.gif_file import TRAILER, Digits, Reduction, delay_ms, header
    from physarum.render.formats.gif_pool import CompressPool, FrameTask, pool_size
    from physarum.render.look.colour import downscale, make_colourist, preview_size
    from physarum.render.out.specs import gif_digits
    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path
    from physarum.render.preset.output_sections import parse_gif_budget
    from physarum.render.preset.provenance import embedded_text
    from physarum.render.run.machine import resolve_backend, resolve_device
    from physarum.render.run.runner import RenderOptions, render
    from physarum.render.sim.simulation import advance, make_simulation, simulation_maps

    settings = _settings(run.set)
    processes = run.processes or pool_size(1)
    preset = load_preset(resolve_preset_path(run.preset), settings)
    device = resolve_device(run.device)
    began = time.perf_counter()
    simulation = make_simulation(preset, resolve_backend("auto", device), device)
    colourist = make_colourist(preset)
    size = preview_size(preset.canvas.width, preset.canvas.height, preset.output.gif_scale)
    store = FrameStore()
    advance(simulation, preset.run.warmup)
    remaining = preset.run.steps
    for number in range(preset.frames):
        steps = min(preset.run.steps_per_frame, remaining)
        advance(simulation, steps)
        remaining -= steps
        index, _ = colourist.colour(simulation_maps(preset, simulation.trail, 0), number, rgb=False)
        store.append(downscale(index, size).cpu().numpy(), colourist.table(number))
    out = preset.output
    spec = GifSpec(
        Path("bench.gif"), *size, out.fps, out.loop, embedded_text(preset), colourist.table(0).tobytes(),
        frames=preset.frames, digits=gif_digits(preset),
    )  # fmt: skip
    run.record("simulate and keep frames", time.perf_counter() - began, frames=len(store))
    began = time.perf_counter()
    pool = CompressPool(processes).ready()
    run.record(f"start {processes} workers", time.perf_counter() - began)
    serial_pool = CompressPool(1)

    def encode_all(chosen_pool, raw: bool) -> bytes:
        frames = [store.frame(number) for number in range(len(store))] if raw else None
        data = io.BytesIO()
        data.write(header(spec.width, spec.height, spec.palette, spec.loop, spec.comment))
        delay = delay_ms(spec.fps)

        def tasks():
            for number in range(len(store)):
                if raw:
                    index, palette = frames[number]
                    yield FrameTask(index, palette, Reduction(), Digits(), palette != spec.palette, delay)
                    continue
                packed, palette = store.packed(number)
                yield FrameTask(
                    packed, palette, Reduction(), Digits(), palette != spec.palette, delay, store.shape
                )

        for block in chosen_pool.map(tasks()):
            data.write(block)
        data.write(TRAILER)
        return data.getvalue()

    for raw, kind in ((True, "index frames, as a render streams them"), (False, "kept frames (zlib)")):
        serial = encode_all(serial_pool, raw)
        parallel = encode_all(pool, raw)
        same = parallel == serial
        a = run.measure(f"encode serial, {kind}", lambda: encode_all(serial_pool, raw), repeats=1, warmup=0)
        b = run.measure(
            f"encode {processes} processes, {kind}",
            lambda: encode_all(pool, raw),
            repeats=1,
            warmup=0,
            bytes=len(parallel),
            same_bytes_as_serial=same,
            failed=not same,
        )
        run.record(f"encode {kind} speedup", speedup=round(a.median / b.median, 2), bytes=len(serial))
    for text in run.budgets.split(","):
        budget = parse_gif_budget(text)

        def choose(chosen_pool):
            file = io.BytesIO()
            plan = Budgeter(store, replace(spec, max_bytes=budget), Digits(*spec.digits), chosen_pool).write(
                file
            )
            return file.getvalue(), plan.report()

        began = time.perf_counter()
        data, report = choose(pool)
        seconds = time.perf_counter() - began
        same = processes == 1 or choose(serial_pool)[0] == data
        report["why"] = report["why"][-1:]
        run.record(f"budget {text}", seconds, **report, same_choice_1_and_n=same, failed=not same)
    pool.close()
    serial_pool.close()
    if not run.renders:
        return
    first = run.budgets.split(",")[0]
    walls = []
    for label, extra in (
        ("render, no budget", []),
        (f"render, budget {first}", [f"output.gif_max_bytes={first}"]),
    ):
        chosen = load_preset(resolve_preset_path(run.preset), [*settings, "output.formats=[gif]", *extra])
        with tempfile.TemporaryDirectory() as folder:
            began = time.perf_counter()
            result = render(
                chosen, RenderOptions(device=run.device or None, out_dir=Path(folder), quiet=True)
            )
            walls.append(time.perf_counter() - began)
            run.record(label, walls[-1], bytes=result.outputs["gif"].stat().st_size)
    run.record("budgeted render / unbudgeted", ratio=round(walls[1] / walls[0], 2))


@case(
    "mp4-colour",
    preset="quickstart",
    set="",
    small={"set": "canvas.width=128;canvas.height=128;agents.count=4000;run.steps=60"},
)
def mp4_colour(run) -> None:
    """How much colour each MP4 setting keeps (issue 16): mean RGB PSNR against the exact frames
    (a render's PNG sequence), file size and encoding time of every output.mp4 setting and of
    yuv444p (a candidate not offered). Each decoded frame (PyAV's rgb24, as a player without
    colour management shows it) against its exact frame; a setting enlarged 2x shrunk back by
    2x2 block means, as a browser showing the video at the canvas's size does."""
    import av
    import numpy as np
    from PIL import Image

    from physarum.render.formats import mp4
    from physarum.render.formats.contract import Frame
    from physarum.render.formats.mp4 import MP4_SETTINGS, Mp4Setting, Mp4Spec
    from physarum.render.formats.registry import open_writer
    from physarum.render.out.specs import output_stem
    from physarum.render.preset import load_preset
    from physarum.render.run.runner import RenderOptions, render

    preset = load_preset(ROOT / "presets" / f"{run.preset}.yaml", _settings(run.set))
    candidates = {
        "yuv444p (not offered)": Mp4Setting("libx264", "yuv444p", 1, MP4_SETTINGS["browser"].options)
    }
    MP4_SETTINGS.update(candidates)  # measured beside the offered settings
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            render(
                preset, RenderOptions(out_dir=folder, quiet=True, frames_dir=folder / "frames", device="cpu")
            )
            files = sorted((folder / "frames").glob(f"{output_stem(preset)}-*.png"))
            frames = np.stack([np.asarray(Image.open(path).convert("RGB")) for path in files])
            n, height, width = frames.shape[:3]
            for name, setting in MP4_SETTINGS.items():
                path = folder / f"{name.split()[0]}.mp4"

                def encode():
                    writer = open_writer(Mp4Spec(path, width, height, preset.output.fps, "bench", name))
                    for number in range(n):
                        writer.write(Frame(number, rgb=frames[number]))
                    writer.commit()

                began = time.perf_counter()
                encode()
                seconds = time.perf_counter() - began
                values = []
                with av.open(str(path)) as container:
                    for number, frame in enumerate(container.decode(video=0)):
                        rgb = frame.to_ndarray(format="rgb24")
                        if setting.scale > 1:
                            s = setting.scale
                            h, w = rgb.shape[0] // s, rgb.shape[1] // s
                            blocks = rgb[: h * s, : w * s].reshape(h, s, w, s, 3).astype(np.float64)
                            rgb = np.round(blocks.mean(axis=(1, 3))).astype(np.uint8)
                        mse = float(np.mean((rgb[:height, :width].astype(np.float64) - frames[number]) ** 2))
                        values.append(float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse))
                finite = [v for v in values if v != float("inf")]
                run.record(
                    f"{run.preset} {name}",
                    seconds,
                    codec=setting.codec,
                    pix_fmt=setting.pix_fmt,
                    scale=setting.scale,
                    psnr_db=round(float(np.mean(finite)), 2) if finite else "exact",
                    min_psnr_db=round(float(min(finite)), 2) if finite else "exact",
                    frames_exact=len(values) - len(finite),
                    bytes=path.stat().st_size,
                    frames=n,
                    canvas=f"{width}x{height}",
                    raw_rgb_bytes=int(frames.nbytes),
                    x264_threads=mp4.MP4_THREADS,
                    av_version=av.__version__,
                )
    finally:
        for name in candidates:
            MP4_SETTINGS.pop(name, None)


@case(
    "pipeline",
    frames=600,
    fps_frames=60,
    parts="fps,4k,8k",
    fps_presets="veins,panorama",
    codecs="gif,mp4,png-sequence",
    small={"frames": 6, "fps_frames": 4, "parts": "fps", "fps_presets": "quickstart"},
)
def pipeline(run) -> None:
    """The render pipeline (the GPU never waits for the encoder): encoder throughput (frames/s
    and bytes of each of CODECS, by default GIF from index frames, MP4 and a PNG sequence, at each
    of FPS_PRESETS' canvas, by default veins' 1024x1024 and panorama's 3840x2160, frames prepared
    in memory beforehand: part fps; CODECS may also name mp4-hevc, mp4-av1, webm, webm-alpha,
    mov-alpha, apng, apng-alpha and webp, each at its module's pinned settings and threads, the
    alpha plane the frame's index as output.alpha makes it); a 3840x2160 render of FRAMES frames
    to MP4 against encoding the same frames alone (4k); a 7680x4320 render to MP4 and PNG (8k)."""
    import numpy as np

    from physarum.render.formats.apng import ApngSpec
    from physarum.render.formats.contract import Frame
    from physarum.render.formats.frames_dir import FramesDirSpec
    from physarum.render.formats.gif import GifSpec
    from physarum.render.formats.mov import MovSpec
    from physarum.render.formats.mp4 import Mp4Spec
    from physarum.render.formats.registry import open_writer
    from physarum.render.formats.webm import WebmSpec
    from physarum.render.formats.webp import WebpSpec
    from physarum.render.look.colour import Colourist
    from physarum.render.preset import load_preset
    from physarum.render.run.machine import resolve_backend, resolve_device
    from physarum.render.run.runner import RenderOptions, render
    from physarum.render.sim.simulation import make_simulation

    device = resolve_device(None)
    parts = set(run.parts.split(","))

    def prepared(preset, count: int):
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

    uhd = load_preset(
        ROOT / "presets" / "panorama.yaml",
        [f"run.steps={run.frames * 2}", "run.steps_per_frame=2", "output.formats=[mp4]"],
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        fps_presets = [p for p in run.fps_presets.split(",") if p] if "fps" in parts else []
        for name in fps_presets:
            preset = uhd if name == "panorama" else load_preset(ROOT / "presets" / f"{name}.yaml")
            index, rgb, colourist = prepared(preset, run.fps_frames)
            h, w = index.shape[1:]
            a = folder / "a"
            specs = {
                "gif": lambda: GifSpec(a.with_suffix(".gif"), w, h, 30, 0, "c", colourist.table(0).tobytes()),
                "mp4": lambda: Mp4Spec(a.with_suffix(".mp4"), w, h, 30, "c"),
                "mp4-hevc": lambda: Mp4Spec(a.with_suffix(".mp4"), w, h, 30, "c", "hevc"),
                "mp4-av1": lambda: Mp4Spec(a.with_suffix(".mp4"), w, h, 30, "c", "av1"),
                "webm": lambda: WebmSpec(a.with_suffix(".webm"), w, h, 30, "c"),
                "webm-alpha": lambda: WebmSpec(a.with_suffix(".webm"), w, h, 30, "c", "straight", "rgba"),
                "mov-alpha": lambda: MovSpec(a.with_suffix(".mov"), w, h, 30, "c", "straight", "rgba"),
                "apng": lambda: ApngSpec(a.with_suffix(".apng"), w, h, 30, 0, "c"),
                "apng-alpha": lambda: ApngSpec(a.with_suffix(".apng"), w, h, 30, 0, "c", "straight", "rgba"),
                "webp": lambda: WebpSpec(a.with_suffix(".webp"), w, h, 30, 0, "c"),
                "png-sequence": lambda: FramesDirSpec(folder, "seq", "c"),
            }
            for codec in run.codecs.split(","):
                make = specs[codec]

                def encode(make=make):
                    writer = open_writer(make())
                    for f in range(len(index)):
                        writer.write(Frame(f, index[f], colourist.table(f), rgb[f], alpha=index[f]))
                    writer.commit()

                timing = run.measure(f"{w}x{h} encode {codec}", encode, repeats=1, warmup=0, per=len(index))
                spec = make()
                size = (
                    sum(f.stat().st_size for f in folder.rglob("*.png"))
                    if codec == "png-sequence"
                    else (spec.path.stat().st_size)
                )
                run.record(
                    f"{w}x{h} encode {codec} rate",
                    frames_per_s=round(1e3 / timing.median, 1),
                    bytes=size,
                    frames=len(index),
                    preset=name,
                )
        if "4k" in parts:
            index, rgb, _ = prepared(uhd, run.frames)
            del index

            def alone():
                writer = open_writer(
                    Mp4Spec(folder / "alone.mp4", uhd.canvas.width, uhd.canvas.height, 30, "c")
                )
                for f, frame in enumerate(rgb):
                    writer.write(Frame(f, rgb=frame))
                writer.commit()

            encode_alone = run.measure(
                f"3840x2160 {run.frames} frames MP4 encoding alone", alone, repeats=1, warmup=0
            )
            del rgb
            began = time.perf_counter()
            render(uhd, RenderOptions(out_dir=folder / "render", quiet=True))
            full = time.perf_counter() - began
            run.record(
                f"3840x2160 {run.frames} frames render to MP4",
                full,
                ratio_to_encoding_alone=full / (encode_alone.median / 1e3),
            )
        if "8k" in parts:
            settings = ["canvas.width=7680", "canvas.height=4320", "agents.count=33000000", "run.steps=60"]
            settings += ["run.steps_per_frame=2", "output.formats=[mp4,png]", "name=panorama-8k"]
            eight_k = load_preset(ROOT / "presets" / "panorama.yaml", settings)
            began = time.perf_counter()
            result = render(eight_k, RenderOptions(out_dir=folder / "render", quiet=True))
            run.record(
                "7680x4320 30 frames render to MP4 and PNG",
                time.perf_counter() - began,
                bytes={k: p.stat().st_size for k, p in result.outputs.items()},
            )


def peak_rss_kib() -> int:
    """This process's peak RSS (KiB): VmHWM, which starts anew at exec (ru_maxrss may keep the
    forking parent's peak), else ru_maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def stream_child(variant: str, frames: int, side: int, device: str) -> dict:
    """One variant of the stream case, in a process of its own (peak RSS its own)."""
    import numpy as np
    from PIL import Image

    import physarum
    from physarum.render.run.runner import render

    agents = max(1000, 120_000 * side * side // (512 * 512))
    settings = {
        "canvas.width": side,
        "canvas.height": side,
        "agents.count": agents,
        "run.steps": frames,
        "run.steps_per_frame": 1,
        "output.loop_frames": 1,  # quickstart crossfades; one frame keeps the count
        "output.formats": ["png"],
    }
    chosen = physarum.load("quickstart", settings)
    disk: list[int] = []

    def folder_frames():
        with tempfile.TemporaryDirectory(prefix="physarum-bench-") as folder:
            render(
                chosen, device=device, out_dir=Path(folder) / "o", quiet=True, frames_dir=Path(folder) / "f"
            )
            paths = sorted((Path(folder) / "f").glob("*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
            disk.append(sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file()))
            for path in paths:
                with Image.open(path) as image:
                    yield np.asarray(image.convert("RGB"))

    started = time.perf_counter()
    made = physarum.frames(chosen, device=device) if variant == "streamed" else folder_frames()
    first, count = None, 0
    for _ in made:
        first = first if first is not None else time.perf_counter() - started
        count += 1
    return {
        "frames": count,
        "first_frame_s": round(first, 3),
        "wall_s": round(time.perf_counter() - started, 3),
        "peak_rss_mb": round(peak_rss_kib() / 1024, 1),
        "peak_disk_mb": round(max(disk, default=0) / 1e6, 1),
        "threads_left": threading.active_count() - 1,
    }


@case("stream", frames=2000, side=128, device="cpu", small={"frames": 100, "side": 64})
def stream(run) -> None:
    """physarum.frames(): time to the first frame, wall to the last, peak RSS and peak disk of a
    long run (quickstart at SIDE x SIDE, one step a frame), streamed (render/run/stream.py)
    against the frames folder it replaced (a render into a temporary folder of PNGs, read back:
    frames() up to 0.3.0); each variant in a process of its own, so neither inherits the other's
    peak."""
    for variant in ("streamed", "folder"):
        command = [sys.executable, __file__, variant, str(run.frames), str(run.side), run.device]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        run.record(
            variant,
            row.pop("wall_s"),
            peak_mib=row["peak_rss_mb"],  # the child's VmHWM
            peak_kind="rss (child)",
            python=platform.python_version(),
            **row,
        )


# Each codec's own switch of its assembly (what a CPU of fewer instruction sets runs): "none" C
# only, "avx2" up to AVX2 (no AVX-512), absent: the codec's own choice (auto). x264 takes a CPU
# mask (0: none) in x264-params, x265 and SVT-AV1 an instruction set by name, libvpx the
# VPX_SIMD_CAPS mask (HAS_* bits up to AVX2: 0x1ff) from the environment, at its start; ProRes
# (prores_ks) and the RGB-to-YUV conversion (swscale) are FFmpeg's, which av_force_cpu_flags sets.
CODEC_ASM = {
    "h264": {"none": "asm=0", "avx2": "asm={}"},  # x264's detected mask less X264_CPU_AVX512 (0x10000)
    "hevc": {"none": "asm=0", "avx2": "asm=avx2", "avx512": "asm=avx512"},
    "av1": {"none": "asm=c", "avx2": "asm=avx2"},
    "vp9": {"none": "0", "avx2": "0x1ff"},
    "prores": {},
}
FFMPEG_AVX512 = 0x100000 | 0x200000  # AV_CPU_FLAG_AVX512, AV_CPU_FLAG_AVX512ICL


def force_ffmpeg_flags(level: str) -> int:
    """FFmpeg's CPU flags in this process (av_force_cpu_flags of the libavutil PyAV loaded):
    none (C only), avx2 (the detected flags less AVX-512) or auto; the flags in force."""
    import ctypes

    import av  # noqa: F401  (loads PyAV's libavutil)

    with open("/proc/self/maps") as maps:
        path = next(line.split()[-1] for line in maps if "libavutil" in line)
    avutil = ctypes.CDLL(path)
    detected = avutil.av_get_cpu_flags()
    flags = {"none": 0, "avx2": detected & ~FFMPEG_AVX512, "auto": detected}[level]
    avutil.av_force_cpu_flags(flags)
    return avutil.av_get_cpu_flags()


def x264_detected() -> int:
    """x264's own CPU mask on this machine (x264_cpu_detect of the libx264 PyAV loaded)."""
    import ctypes

    with open("/proc/self/maps") as maps:
        path = next(line.split()[-1] for line in maps if "libx264" in line)
    library = ctypes.CDLL(path)
    library.x264_cpu_detect.restype = ctypes.c_uint32
    return library.x264_cpu_detect()


def asm_child(codec: str, codec_level: str, ffmpeg_level: str, frames_path: str, folder: str) -> dict:
    """One encode of the frames (an .npy [N, H, W, 3]) by `codec` at the repository's settings,
    its assembly at codec_level and FFmpeg's at ffmpeg_level (VPX_SIMD_CAPS is the parent's to
    set): the file's sha256, bytes and seconds."""
    import dataclasses
    import hashlib

    import numpy as np

    from physarum.render.formats import mov, mp4, webm
    from physarum.render.formats.av_video import AvVideoWriter
    from physarum.render.formats.contract import Frame

    flags = force_ffmpeg_flags(ffmpeg_level)
    frames = np.load(frames_path)
    height, width = frames.shape[1:3]
    switch = CODEC_ASM[codec].get(codec_level)
    path = (
        Path(folder)
        / f"{codec}-{codec_level}-{ffmpeg_level}.{'mp4' if codec in ('h264', 'hevc', 'av1') else codec}"
    )
    if codec == "h264" and switch:
        params, switch = mp4.x264_params, switch.format(x264_detected() & ~0x10000)
        mp4.x264_params = lambda: f"{params()}:{switch}"
    if codec in ("hevc", "av1") and switch:
        setting = mp4.MP4_SETTINGS[codec]
        key, value = setting.params
        mp4.MP4_SETTINGS[codec] = dataclasses.replace(setting, params=(key, f"{value}:{switch}"))
    if codec in ("h264", "hevc", "av1"):
        writer = mp4.Mp4Writer(
            mp4.Mp4Spec(path, width, height, 30, "asm", "browser" if codec == "h264" else codec)
        )
    else:
        module, fmt = (webm, "webm") if codec == "vp9" else (mov, "mov")
        table = webm.WEBM_SETTINGS if codec == "vp9" else mov.MOV_SETTINGS
        options = webm.WEBM_CONTAINER if codec == "vp9" else None
        writer = AvVideoWriter(
            path, fmt, table["opaque"], (width, height), 30, "asm", None, container_options=options
        )
    began = time.perf_counter()
    for number, rgb in enumerate(frames):
        writer.write(Frame(number, rgb=rgb))
    writer.commit()
    seconds = time.perf_counter() - began
    data = path.read_bytes()
    return {
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "seconds": seconds,
        "ffmpeg_flags": flags,
    }


@case("codec-asm", side=256, frames=48, codecs="h264,hevc,av1,vp9,prores", small={"side": 128, "frames": 12})
def codec_asm(run) -> None:
    """Whether each video codec's bytes follow the CPU's instruction sets: the same frames
    (quickstart at SIDE x SIDE) encoded at the repository's settings with the codec's assembly
    as detected, up to AVX2, and off (C only), and FFmpeg's (swscale's RGB to YUV, prores_ks) as
    detected, up to AVX2, and off; each encode in a process of its own, its sha256 against the
    first's. A codec whose bytes are the same with its assembly off as on gives the same file on
    a CPU of any instruction sets (x86-64; ARM's own assembly is not measured)."""
    import numpy as np

    import physarum

    settings = {"canvas.width": run.side, "canvas.height": run.side, "run.steps": 5 * run.frames}
    settings |= {"agents.count": 120_000 * run.side**2 // 512**2, "output.loop_frames": 1}
    frames = np.stack(list(physarum.frames(physarum.load("quickstart", settings), device="cpu")))
    with tempfile.TemporaryDirectory(prefix="physarum-asm-") as folder:
        np.save(Path(folder) / "frames.npy", frames)
        for codec in run.codecs.split(","):
            levels = [("auto", "auto"), *((level, "auto") for level in CODEC_ASM[codec])]
            levels += [("auto", "avx2"), ("auto", "none"), ("none", "none")]
            first = None
            for codec_level, ffmpeg_level in levels:
                env = dict(os.environ)
                if codec == "vp9" and codec_level in CODEC_ASM["vp9"]:
                    env["VPX_SIMD_CAPS"] = CODEC_ASM["vp9"][codec_level]
                argv = [
                    sys.executable,
                    __file__,
                    "asm",
                    codec,
                    codec_level,
                    ffmpeg_level,
                    str(Path(folder) / "frames.npy"),
                    folder,
                ]
                done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
                row = json.loads(done.stdout.strip().splitlines()[-1])
                first = first or row["sha256"]
                run.record(
                    f"{codec} asm {codec_level}, ffmpeg {ffmpeg_level}",
                    row.pop("seconds"),
                    same_bytes=row["sha256"] == first,
                    frames=len(frames),
                    canvas=f"{run.side}x{run.side}",
                    cpu=platform.processor() or platform.machine(),
                    **row,
                )


if __name__ == "__main__":  # a child: the stream case's (VARIANT FRAMES SIDE DEVICE), codec-asm's (asm ...)
    if sys.argv[1] == "asm":
        print(json.dumps(asm_child(*sys.argv[2:7])))
    else:
        print(json.dumps(stream_child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])))
