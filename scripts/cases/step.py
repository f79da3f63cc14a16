"""Cases of the simulation step: the 3D step (3d), its tuning variants (tune-3d), the 2D Triton
step's tuning variants (tune-batch), the cost of keyframed parameters (keyframes) and of a
soundtrack's features and the values that follow them (audio), and the CPU step's time against
the estimate said before a long render (estimate).

    python -m physarum.render.tools.harness case 3d            # H200: about 1-2 minutes
    python -m physarum.render.tools.harness case keyframes --preset veins --steps 1000
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from contextlib import contextmanager

from physarum.render.tools.harness import Skip, case

# Bytes per second of each GPU's memory, its maker's figure: the H200's HBM3e, the H100 SXM's HBM3
HBM = {"H200": 4.8e12, "H100": 3.35e12}


def hbm_bandwidth() -> float:
    """The memory bandwidth of this CUDA device by its name (HBM), the H200's where unknown."""
    import torch

    name = torch.cuda.get_device_name()
    return next((rate for gpu, rate in HBM.items() if gpu in name), HBM["H200"])


CONFIGS_3D = {"256^3/16M": (256, 1 << 24), "512^3/64M": (512, 1 << 26)}


def _params3d():
    from physarum.kernels.api import ModelParams

    return ModelParams(22.5, 9.0, 45.0, 1.0, 5.0, 1.0, 0.1, 1)  # veins-like, in voxels


def phase_ms(simulation, steps: int = 32) -> dict:
    """ms per step of each launch of a CUDA simulation (and of a sort, per sort), from eager
    steps timed by CUDA events."""
    import torch

    pending = []

    @contextmanager
    def phase(name: str):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        yield
        end.record()
        pending.append((name, start, end))

    simulation._steps_since_sort = simulation._sort_every  # one sort among the timed steps
    for _ in range(steps):
        simulation.profiled_step(phase)
    torch.cuda.synchronize()
    totals, counts = defaultdict(float), defaultdict(int)
    for name, start, end in pending:
        totals[name] += start.elapsed_time(end)
        counts[name] += 1
    return {name: round(totals[name] / counts[name], 4) for name in totals}


def same_state(a, b) -> bool:
    import torch

    return (
        torch.equal(a.position, b.position)
        and torch.equal(a.heading, b.heading)
        and torch.equal(a.trail.view(torch.int32), b.trail.view(torch.int32))
    )


@case("3d", needs="cuda", configs=",".join(CONFIGS_3D), steps=128, develop=192, identity="96,1000000,100")
def step_3d(run) -> None:
    """The 3D step (issue 27): ms/step and agent-steps/s of the Triton backend at 256^3 with 16M
    agents and 512^3 with 64M, against the memory floor (agent state, 14 bytes, and the float32
    trail, each read and written once, over the GPU's HBM bandwidth (HBM) and over the copy
    bandwidth measured here),
    per launch, peak memory; Triton = the torch reference on CUDA at a medium size, every boundary.

    Protocol: spawn, develop DEVELOP steps (compiles, captures the CUDA graphs, sorts), then
    repeats of STEPS steps (each with two agent sorts, every 64 steps) timed by CUDA events."""
    import torch

    from physarum.kernels import exact3d
    from physarum.kernels.api import ModelParams, World
    from physarum.kernels.reference3d import TorchSimulation3D
    from physarum.kernels.spawn3d import spawn3d
    from physarum.kernels.triton3d import TritonSimulation3D
    from physarum.render.tools.bench import copy_bandwidth

    params = _params3d()
    bandwidth = copy_bandwidth(torch.device("cuda"))
    hbm = hbm_bandwidth()
    side, agents, steps = (int(v) for v in run.identity.split(","))
    for boundary in ("wrap", "reflect", "clamp"):
        state = spawn3d([5, 6], agents, (side, side + 8, side + 16), "ball", radius=0.45, device="cuda")
        both = [params, ModelParams(40.0, 6.5, 30.0, 1.7, 2.0, 0.6, 0.05, 6)]
        tables = exact3d.build_tables3d(both, device="cuda")
        world = World(boundary=boundary)
        reference = TorchSimulation3D(state.clone(), tables, world)
        triton = TritonSimulation3D(state.clone(), tables, world, sort_every=32)
        reference.advance(steps)
        triton.advance(steps)
        same = same_state(reference.state, triton.state)
        run.record(f"identity {side}^3-ish x2 {steps} steps {boundary}", same_bytes=same, failed=not same)
        del reference, triton
    for name in run.configs.split(","):
        side, agents = CONFIGS_3D[name]
        torch.cuda.empty_cache()
        began = time.perf_counter()
        state = spawn3d([params.seed], agents, (side,) * 3, "ball", radius=0.45, device="cuda")
        tables = exact3d.build_tables3d([params], device="cuda")
        simulation = TritonSimulation3D(state, tables, World(), device="cuda")
        del state
        simulation.advance(run.develop)
        torch.cuda.synchronize()
        ready = time.perf_counter() - began
        torch.cuda.reset_peak_memory_stats()
        timing = run.measure(
            f"{name} timed",
            lambda s=simulation: s.advance(run.steps),
            per=run.steps,
            warmup=0,
            repeats=5,
        )
        ms = timing.median
        floor = 2 * (agents * 14 + side**3 * 4)
        per_agent, per_cell = TritonSimulation3D.device_bytes(agents)
        run.record(
            f"{name} summary",
            agent_steps_per_s=agents / (ms / 1e3),
            x_floor_hbm=round(ms / (floor / hbm * 1e3), 3),
            hbm_bandwidth=hbm,
            x_floor_copy=round(ms / (floor / bandwidth * 1e3), 3),
            copy_bandwidth=bandwidth,
            peak_gib_with_spawn=torch.cuda.max_memory_allocated() / 2**30,
            estimate_gib=(per_agent * agents + per_cell * side**3) / 2**30,
            seconds_to_develop=round(ready, 1),
            phase_ms=phase_ms(simulation),
            trail_mass=float(simulation.trail.double().sum()),
        )
        del simulation


def torch_sort3d(position, heading, agent_id, grid) -> None:
    """The 3D sort as torch ops (the backend's sort until the fused kernels): brick_keys, argsort,
    three gathers and copies back."""
    import torch

    from physarum.kernels.triton3d import brick_keys

    for b in range(position.shape[0]):
        order = torch.argsort(brick_keys(position[b], grid))
        position[b].copy_(position[b][:, order])
        heading[b].copy_(heading[b][order])
        agent_id[b].copy_(agent_id[b][order])


@case("sort-3d", needs="cuda", configs=",".join(CONFIGS_3D), develop=64)
def sort_3d(run) -> None:
    """The 3D agents' sort (every SORT_EVERY_3D steps): kernels/triton_sort.sort_agents3d (a key
    kernel, argsort, one permutation kernel) against the same sort in torch ops, each timed on a
    copy of one developed state (DEVELOP steps unsorted since their last sort), the two orders
    checked equal, and argsort alone."""
    import torch

    from physarum.kernels import exact3d
    from physarum.kernels.api import World
    from physarum.kernels.spawn3d import spawn3d
    from physarum.kernels.triton3d import TritonSimulation3D, brick_keys
    from physarum.kernels.triton_sort import sort_agents3d

    params = _params3d()
    for name in run.configs.split(","):
        side, agents = CONFIGS_3D[name]
        torch.cuda.empty_cache()
        state = spawn3d([params.seed], agents, (side,) * 3, "ball", radius=0.45, device="cuda")
        simulation = TritonSimulation3D(state, exact3d.build_tables3d([params], device="cuda"), World())
        del state
        simulation.advance(run.develop + 1)  # a sort at the first step, DEVELOP steps after it
        grid = simulation._grid
        lanes = (simulation._position, simulation._heading, simulation._agent_id)
        results = {}
        for label, sort in (("torch ops", torch_sort3d), ("fused", sort_agents3d)):

            def once(sort=sort):
                work = [t.clone() for t in lanes]  # each sort from the same developed state
                torch.cuda.synchronize()
                began = time.perf_counter()
                sort(*work, grid)
                torch.cuda.synchronize()
                return time.perf_counter() - began, work

            once()
            timed = [once() for _ in range(5)]
            results[label] = timed[0][1]
            run.record(f"{name} sort, {label}", [t for t, _ in timed])
        same = all(torch.equal(a, b) for a, b in zip(results["torch ops"], results["fused"]))
        run.record(f"{name} sort orders", same_order=same, failed=not same)
        keys = brick_keys(simulation._position[0], grid)
        run.measure(f"{name} argsort alone", lambda k=keys: torch.argsort(k), repeats=5)
        del simulation, results, keys


VARIANTS_3D = [
    ("baseline", {}, 64),
    ("sort 128", {}, 128),
    ("agent block 128", {"AGENT_BLOCK": 128}, 64),
    ("agent block 512", {"AGENT_BLOCK": 512}, 64),
    ("agent block 256, 2 warps", {"AGENT_WARPS": 2}, 64),
    ("diffuse 1x512", {"DIFFUSE_BLOCK_W": 512}, 64),
    ("diffuse 1x512, 8 warps", {"DIFFUSE_BLOCK_W": 512, "DIFFUSE_WARPS": 8}, 64),
    ("diffuse 1x128", {"DIFFUSE_BLOCK_W": 128}, 64),
    ("diffuse 2x256", {"DIFFUSE_BLOCK_H": 2}, 64),
    ("diffuse 1x256, 2 warps", {"DIFFUSE_WARPS": 2}, 64),
    ("diffuse z 32", {"DIFFUSE_BLOCK_Z": 32}, 64),
    ("diffuse z 64", {"DIFFUSE_BLOCK_Z": 64}, 64),
]


@contextmanager
def constants_set(module, constants: dict):
    """A kernel module's tuning constants set for the block, put back after."""
    saved = {name: getattr(module, name) for name in constants}
    try:
        for name, value in constants.items():
            setattr(module, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


@case("tune-3d", needs="cuda", side=256, agents=1 << 24, steps=128)
def tune_3d(run) -> None:
    """Tuning variants of the 3D Triton step (kernels/triton3d_kernels.py's constants, the sort
    interval) at one size, each checked to give the first variant's bytes: tuning changes speed
    only. About a minute on an H200 at 256^3 with 16M agents."""
    from physarum.kernels import exact3d
    from physarum.kernels import triton3d_kernels as kernels
    from physarum.kernels.api import World
    from physarum.kernels.spawn3d import spawn3d
    from physarum.kernels.triton3d import TritonSimulation3D

    params = _params3d()
    state = spawn3d([params.seed], run.agents, (run.side,) * 3, "ball", radius=0.45, device="cuda")
    tables = exact3d.build_tables3d([params], device="cuda")
    developed = TritonSimulation3D(state, tables, World())
    developed.advance(256)
    state = developed.state
    del developed
    first = None
    for name, constants, sort_every in VARIANTS_3D:
        with constants_set(kernels, constants):
            simulation = TritonSimulation3D(state, tables, World(), sort_every=sort_every)
            simulation.advance(run.steps)  # compile, capture
            timing_args = dict(per=run.steps, warmup=0, repeats=3)
            timing = run.measure(name, lambda s=simulation: s.advance(run.steps), **timing_args)
            phases = phase_ms(simulation)
            check = TritonSimulation3D(state, tables, World(), sort_every=sort_every)
            check.advance(run.steps)
            result = check.state
        first = result if first is None else first
        same = same_state(first, result)
        run.record(
            f"{name} check", ms_per_step=timing.median, phase_ms=phases, same_bytes=same, failed=not same
        )
        del simulation, check


VARIANTS_2D = [
    ("baseline", {}, 128),
    ("sort 64", {}, 64),
    ("sort 32", {}, 32),
    ("sort 256", {}, 256),
    ("agent block 512", {"AGENT_BLOCK": 512}, 128),
    ("agent block 256", {"AGENT_BLOCK": 256}, 128),
    ("agent block 2048, 8 warps", {"AGENT_BLOCK": 2048, "AGENT_WARPS": 8}, 128),
    ("agent 8 warps", {"AGENT_WARPS": 8}, 128),
    ("diffuse 1024-cell tiles", {"DIFFUSE_BLOCK_W": 1024}, 128),
    ("diffuse 2048-cell tiles, 8 warps", {"DIFFUSE_BLOCK_W": 2048, "DIFFUSE_WARPS": 8}, 128),
    ("diffuse 256-cell tiles", {"DIFFUSE_BLOCK_W": 256}, 128),
    ("no warp-merged deposits", {"WARP_AGGREGATED_DEPOSITS": False}, 128),
]


@case("tune-batch", needs="cuda", config="X", develop=500, steps=512)
def tune_batch(run) -> None:
    """Tuning variants of the 2D Triton step on a batched configuration (the bench's X: 64
    simulations of 65,536 agents on 256x256; or B,N,W,H), each timed from one developed state
    (render/tools/bench.py's protocol, graphs on) and its state after the timed steps checked
    byte-identical to the first variant's."""
    import torch

    from physarum.kernels import triton_kernels as kernels
    from physarum.kernels.triton_backend import TritonSimulation
    from physarum.render.tools.bench import CONFIGS, Config, develop

    device = torch.device("cuda")
    config = CONFIGS.get(run.config) or Config("custom", *map(int, run.config.split(",")))
    state, tables = develop(config, device, run.develop)
    expected = None
    for name, constants, sort_every in VARIANTS_2D:
        with constants_set(kernels, constants):
            simulation = TritonSimulation(state, tables, sort_every=sort_every, device=device)
            simulation.advance(run.steps)  # compile, capture the graphs
            run.measure(name, lambda s=simulation: s.advance(run.steps), per=run.steps, warmup=0)
            check = TritonSimulation(state, tables, sort_every=sort_every, device=device)
            check.advance(run.steps)
            final = check.state.to("cpu")
        expected = final if expected is None else expected
        same = same_state(final, expected)
        run.record(
            f"{name} check", constants=constants, sort_every=sort_every, same_bytes=same, failed=not same
        )


KEYFRAMES = {
    "fixed": [],
    "hold": ["model.decay={ease: hold, keys: {0: 0.05, 25%: 0.1, 50%: 0.05, 75%: 0.1}}"],
    "angle ramp": ["model.sensor_angle={keys: {0: 15, 100%: 60}}"],
    "distance ramp": ["model.sensor_distance={keys: {0: 9, 100%: 25}}"],
}


@case(
    "keyframes",
    preset="veins",
    steps=1000,
    device="",
    set="",
    small={
        "preset": "quickstart",
        "steps": 60,
        "set": "canvas.width=128;canvas.height=128;agents.count=4000",
    },
)
def keyframes(run) -> None:
    """Keyframed parameters against fixed ones, the simulation alone on one preset's canvas and
    agents (docs/presets.md, "Schedules"): the model as written ("fixed"), a hold schedule of
    decay, a linear ramp of sensor_angle (new sensor_turn every few steps), a linear ramp of
    sensor_distance (new vector tables every step). Each: STEPS steps from a fresh spawn (the
    spawn untimed), after a warm-up run; the retunes and the slowdown against fixed."""
    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path

    extra = [s for s in run.set.split(";") if s]
    presets = (
        (name, load_preset(resolve_preset_path(run.preset), [*extra, f"run.steps={run.steps}", *settings]))
        for name, settings in KEYFRAMES.items()
    )
    if not steps_against_fixed(run, presets):
        raise Skip("no case ran")


def steps_against_fixed(run, presets) -> bool:
    """RUN.steps steps of each (label, preset), the first the fixed one: each after a warm-up
    run (compiles, graphs), timed from a fresh spawn (spawned before the clock), with its
    retunes and its slowdown against the first recorded. Whether any ran."""
    from physarum.render.run.machine import resolve_backend, resolve_device
    from physarum.render.sim.simulation import make_simulation

    device = resolve_device(run.device)
    backend = resolve_backend("auto", device)
    fixed = None
    for label, preset in presets:
        make_simulation(preset, backend, device).advance(run.steps)  # warm-up: compiles, graphs
        fresh = [
            make_simulation(preset, backend, device) for _ in range((run.repeats or 3) + (run.warmup or 0))
        ]
        retunes = []

        def step_one():
            simulation = fresh.pop()
            simulation.advance(run.steps)
            retunes.append(getattr(simulation, "retunes", 0))

        timing = run.measure(
            label, step_one, per=run.steps, warmup=0, repeats=3, device=device, backend=backend
        )
        fixed = fixed or timing.median
        run.record(f"{label} summary", retunes=retunes[0], slowdown=round(timing.median / fixed, 3))
    return fixed is not None


AUDIO_FOLLOWING = [
    "model.deposit={audio: bass, range: [3, 7], attack: 10ms, release: 200ms}",
    "model.decay={audio: onset, range: [0.03, 0.08], release: 150ms}",
    "model.sensor_angle={audio: loudness, range: [40, 80], release: 300ms}",
]


def write_track(path, seconds: int):
    """scripts/make_soundtracks.py's pulse pattern, repeated to `seconds`, as stereo 44100 Hz FLAC."""
    import sys
    from pathlib import Path

    import av
    import numpy as np

    from physarum.render.preset import audio_features

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/: make_soundtracks
    from make_soundtracks import TRACKS, pattern

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


@case(
    "audio",
    seconds=180,
    preset="veins",
    steps=2000,
    device="",
    set="",
    small={
        "seconds": 20,
        "preset": "quickstart",
        "steps": 60,
        "set": "canvas.width=128;canvas.height=128;agents.count=4000",
    },
)
def audio_cost(run) -> None:
    """The soundtrack's cost (docs/audio.md, "Cost"; issue 36): the feature extraction of a
    SECONDS track as a render and `physarum validate` pay it (audio.analyser_of: the file decoded,
    mixed and resampled straight into an Analyser at PRESET's fps, no PCM held, then every
    feature; the first repeat cold, the median of three; peak RSS), and STEPS steps of PRESET
    whose deposit, decay and sensor_angle follow bass, onset and loudness (new tables every
    frame) against the same preset with fixed values (a fresh spawn each, untimed; warmed up
    once)."""
    import tempfile
    from pathlib import Path

    from physarum.render.preset import audio, audio_features, load_preset
    from physarum.render.preset.catalog import resolve_preset_path

    with tempfile.TemporaryDirectory() as folder:
        track = write_track(Path(folder) / "track.flac", run.seconds)
        steps = [f"run.steps={run.steps}"] if run.steps else []  # 0: the preset's own (fps only)
        sized = [*[s for s in run.set.split(";") if s], *steps]
        fps = load_preset(resolve_preset_path(run.preset), sized).output.fps  # no track: nothing analysed

        def extract():  # analyser_of's work and analysis_of's result, no cache between repeats
            analyser = audio_features.Analyser(fps)
            audio.decode(str(track), str(track), analyser)
            analyser.result()

        run.measure(
            f"features of a {run.seconds} s track (stereo 44100 Hz FLAC) decoded into the analysis, {fps} fps",
            extract,
            repeats=3,
            warmup=0,
            device="cpu",
        )
        if not run.steps:
            return
        base = [*sized, f"audio.path={track}"]
        presets = (
            (f"{run.preset} {name}", load_preset(resolve_preset_path(run.preset), [*base, *settings]))
            for name, settings in (("fixed", []), ("following", AUDIO_FOLLOWING))
        )
        steps_against_fixed(run, presets)


ESTIMATE_PRESETS = "labyrinth,quickstart,tribes,rivals,embers,veins,rings,feast,maze,cave"


def sized_preset(name: str, size: str):
    """The curated preset `name` at `size`: "full", "half" (--reduce 2) or "preview" (its
    `render --preview` reduction, as cli/arguments.py chooses it: thinned where that thins it, a
    volume's short side 48)."""
    from fractions import Fraction

    from physarum.render.cli.arguments import preview_ratio
    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path
    from physarum.render.preset.reduce import reduce_preset

    preset = load_preset(resolve_preset_path(name))
    if size == "full":
        return preset
    ratio = preview_ratio(preset) if size == "preview" else Fraction(1, 2)
    return reduce_preset(preset, ratio, "preview" if size == "preview" else "reduce")[0]


@case(
    "estimate",
    presets=ESTIMATE_PRESETS,
    sizes="full,half,preview",
    steps=0,
    small={"presets": "quickstart,tribes", "sizes": "preview", "steps": 2},
)
def estimate(run) -> None:
    """The CPU step against the estimate said before a long render (run/estimate.py): ms a
    step of each curated preset (2D or 3D) at its full size, half its size (--reduce 2) and its preview,
    torch on one render's share of the cores (machine.limit_cpu_threads(2)): the mean of its
    whole run (STEPS 0: a step's cost changes as the agents gather), or of STEPS steps after 3
    untimed ones, three times; each row's extra holds its agents, cells (all species' trails),
    the estimate's ms a step and estimate / measured."""
    from physarum.render.run.estimate import step_seconds
    from physarum.render.run.machine import limit_cpu_threads
    from physarum.render.sim.simulation import make_simulation

    threads = limit_cpu_threads(2)  # a CPU render's share: the rest is its encoders'
    for name in run.presets.split(","):
        for size in run.sizes.split(","):
            sized = sized_preset(name, size)
            estimated = step_seconds(sized, "cpu", "torch")  # a volume's ray march apart
            cells = sized.canvas.width * sized.canvas.height * (sized.canvas.depth or 1)
            simulation = make_simulation(sized, "torch", "cpu")
            steps, repeats = (sized.end_step, 1) if not run.steps else (run.steps, run.repeats or 3)
            if run.steps:
                simulation.advance(3)
            seconds = []
            for _ in range(repeats):
                start = time.perf_counter()
                simulation.advance(steps)
                seconds.append((time.perf_counter() - start) / steps)
            run.record(
                f"{name} {size}",
                seconds,
                threads=threads,
                steps=steps,
                agents=sized.agents.count,
                cells=cells * sized.species_count,
                estimate_ms=round(estimated * 1e3, 2),
                estimate_ratio=round(estimated / statistics.median(seconds), 2),
            )
