"""Cases of whole commands: explore's candidates per minute (explore), the live page's rate and
latency (live), a batched sweep against separate renders and across GPUs (sweep), where a sweep's
time goes (sweep-profile), process wall and Triton's kernel cache (startup), a preset's wavelength
at several sizes (resolution), a Ray sweep's jobs per minute on one node and two and its driver's
memory while files come back (sweep-ray).

    python -m physarum.render.tools.harness case explore                      # H200: 1-3 minutes
    python -m physarum.render.tools.harness case explore --device cpu --backend torch --size 128 \
        --steps 200 --population 12                                           # 2 cores: ~2 minutes
    python -m physarum.render.tools.harness case live --args "--backend torch --device cpu"
    python -m physarum.render.tools.harness case sweep-ray                    # 2 cores: ~15 minutes
"""

from __future__ import annotations

import asyncio
import filecmp
import io
import json
import os
import pstats
import shlex
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from physarum.render.tools.harness import Skip, case

CLI = [sys.executable, "-m", "physarum.render.cli"]


@case(
    "explore",
    preset="quickstart",
    size=512,
    steps=600,
    rounds=2,
    population=52,
    keep=16,
    device="cuda",
    backend="triton",
    warm="auto",
    small={
        "size": 64,
        "steps": 40,
        "rounds": 1,
        "population": 4,
        "keep": 2,
        "device": "cpu",
        "backend": "torch",
    },
)
def explore_rate(run) -> None:
    """`physarum explore`'s candidates per minute (issue 26: quickstart at 512^2, 600 steps, 2
    rounds of 52 = 104 candidates; target 100+ in under 2 minutes on the H200), from the explore's
    own start to its files written. With --warm yes (auto: on CUDA) a 2-candidate explore of the
    same shape runs first so that Triton's kernels are compiled before the clock starts."""
    from physarum.render.explore import ExploreOptions, explore
    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path

    if run.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise Skip("--device cuda: no CUDA GPU here (--small or --device cpu --backend torch)")
    preset = load_preset(resolve_preset_path(run.preset))
    warm = run.device.startswith("cuda") if run.warm == "auto" else run.warm in ("yes", "true", "1")
    settings = dict(
        rounds=run.rounds, population=run.population, keep=run.keep, size=run.size, steps=run.steps
    )
    settings.update(backend=run.backend, device=run.device, yes=True, quiet=True)
    with tempfile.TemporaryDirectory(prefix="bench-explore-") as folder:
        if warm:
            small = dict(settings, rounds=1, population=2, keep=1, steps=10)
            explore(preset, ExploreOptions(**small, out=Path(folder) / "warmup"))
        began = time.perf_counter()
        result = explore(preset, ExploreOptions(**settings, out=Path(folder) / "run"))
        seconds = time.perf_counter() - began
    candidates = sum(result.statuses.values())
    run.record(
        f"{run.preset} {run.size}px {run.steps} steps {run.rounds}x{run.population}",
        seconds,
        candidates=candidates,
        candidates_per_minute=round(candidates / seconds * 60, 1),
        warmed=warm,
        statuses=dict(result.statuses),
    )


async def _live_measure(url: str, run) -> dict:
    import aiohttp

    frames, sizes, latencies = [], [], []
    async with aiohttp.ClientSession() as client:
        async with client.ws_connect(url.replace("http://", "ws://").split("?")[0] + "ws") as ws:
            started = time.perf_counter()
            shape, waiting, changes_sent, value = None, None, 0, 0
            next_change = started + run.warm_s + run.seconds
            async for message in ws:
                now = time.perf_counter()
                if message.type == aiohttp.WSMsgType.BINARY:
                    length = struct.unpack(">I", message.data[:4])[0]
                    head = json.loads(message.data[4 : 4 + length])
                    shape = (head["width"], head["height"])
                    if run.warm_s <= now - started <= run.warm_s + run.seconds:
                        frames.append(now)
                        sizes.append(len(message.data))
                    if waiting and "frame" in waiting and head["frame"] >= waiting["frame"]:
                        latencies.append(now - waiting["sent"])
                        waiting = None
                elif message.type == aiohttp.WSMsgType.TEXT:
                    event = json.loads(message.data)
                    if event["type"] == "applied" and waiting is not None:
                        waiting["frame"] = event["changes"][0]["frame"]
                    elif event["type"] == "problem":
                        raise RuntimeError(event["problems"])
                else:
                    break
                if now >= next_change and waiting is None:
                    if changes_sent == run.changes:
                        break
                    value = 1 - value
                    waiting = {"sent": time.perf_counter()}
                    await ws.send_json(
                        {"type": "set", "key": "model.sensor_angle", "value": (30.0, 60.0)[value]}
                    )
                    changes_sent += 1
                    next_change = time.perf_counter() + run.gap
    span = frames[-1] - frames[0] if len(frames) > 1 else 0.0
    return {"frame": shape, "frames": frames, "sizes": sizes, "latencies": latencies, "span": span}


@case(
    "live",
    preset="quickstart",
    seconds=10.0,
    warm_s=3.0,
    changes=10,
    gap=0.5,
    args="",
    small={"seconds": 3.0, "warm_s": 2.0, "changes": 4, "args": "--backend torch --device cpu"},
)
def live(run) -> None:
    """The live page's speed, by a client on the same host (docs/live.md, "Measured"): starts
    `physarum live PRESET ARGS`, connects to its WebSocket on loopback as the page does; frames
    received per second over SECONDS after WARM_S; latency from sending a change of
    model.sensor_angle (alternating two values) to the first frame showing it (the frame the
    server's "applied" reply names), CHANGES times GAP seconds apart. The server gets SIGINT at
    the end."""
    extra = shlex.split(run.args)
    server = subprocess.Popen(
        [*CLI, "live", run.preset, "--port", "0", *extra], stdout=subprocess.PIPE, text=True
    )
    try:
        line = server.stdout.readline()
        if " at " not in line:
            raise SystemExit(f"the server did not start: {line!r}")
        found = asyncio.run(_live_measure(line.split(" at ")[1].split()[0], run))
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    command = " ".join(["physarum live", run.preset, *extra])
    frames, span = found["frames"], found["span"]
    run.record(
        f"{command}: fps",
        frame=found["frame"],
        fps=round((len(frames) - 1) / span, 2) if span else 0.0,
        frames_counted=len(frames),
        mean_message_bytes=round(statistics.mean(found["sizes"])) if found["sizes"] else 0,
        server_exit=server.returncode,
    )
    if found["latencies"]:
        run.record(f"{command}: change to frame latency", found["latencies"])


def batches(sweep_dir: Path) -> list[dict]:
    """A sweep's batches from its manifest: start (epoch seconds), seconds, device, size, phases."""
    rows: dict[tuple, dict] = {}
    for line in (sweep_dir / "manifest.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("status") != "done":
            continue
        key = (record["pid"], record["started"])
        if key not in rows:
            sidecar = sweep_dir / record["outputs"]["json"]
            rows[key] = {
                "start": datetime.fromisoformat(record["started"]).timestamp(),
                "seconds": record["seconds"],
                "device": record["device"],
                "jobs": record["batch"],
                "phases": json.loads(sidecar.read_text())["timings"],
            }
    return sorted(rows.values(), key=lambda row: row["start"])


def _timed(*args: str) -> float:
    began = time.perf_counter()
    subprocess.run([*CLI, *args, "--quiet"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


@case(
    "sweep",
    needs="cuda",
    sweep="sweeps/bench64.yaml",
    devices="cuda:0",
    alone=16,
    two_gpus=False,
    two_gpu_sweeps="sweeps/bench128.yaml,sweeps/bench128-long.yaml",
    work="/tmp/sweep-bench",
)
def sweep(run) -> None:
    """A batched sweep against separate renders (sweeps/bench64.yaml: 64 jobs of 256x256, 65,536
    agents, 600 steps, GIF + MP4 + PNG; target 8x): the sweep in one batch, then ALONE of its jobs
    as separate `physarum render --from` processes, their files compared with the sweep's, the
    time of all extrapolated from their mean when fewer run; with --two-gpus (two H200s), each of
    TWO_GPU_SWEEPS on cuda:0 and on all GPUs (target 1.8x), with their batches."""
    work = Path(run.work)
    if run.alone:
        sweep_s = _timed("sweep", run.sweep, "--out", str(work / "sweep"), "--devices", run.devices)
        every = sorted((work / "sweep").glob("*/*/*.json"))
        alone, identical, different = [], 0, []
        for sidecar in every[: run.alone]:
            device = [] if run.devices == "cuda:0" else ["--device", run.devices]
            alone.append(_timed("render", "--from", str(sidecar), "--out", str(work / "alone"), *device))
            for produced in sidecar.parent.glob("*.*"):
                if produced.suffix not in (".gif", ".mp4", ".png"):
                    continue
                twin = next((work / "alone").glob(f"*/{produced.name}"), None)
                if twin is not None and filecmp.cmp(produced, twin, shallow=False):
                    identical += 1
                else:
                    different.append(produced.name)
        mean, total = statistics.mean(alone), len(every)
        run.record(f"{run.sweep} batched on {run.devices}", sweep_s, jobs=total)
        run.record(
            f"{run.sweep} jobs alone",
            alone,
            alone_all_s=total * mean,
            extrapolated=len(alone) < total,
            speedup=total * mean / sweep_s,
            identical_files=identical,
            different_files=different,
            failed=bool(different),
        )
    if not run.two_gpus:
        return
    import torch

    if torch.cuda.device_count() < 2:
        raise Skip("--two-gpus needs two CUDA GPUs")
    for chosen in run.two_gpu_sweeps.split(","):
        walls = {}
        for label, devices in (("one_gpu", "cuda:0"), ("all_gpus", "all")):
            shutil.rmtree(work / label, ignore_errors=True)  # a finished sweep there would skip its jobs
            began = time.time()
            walls[label] = _timed("sweep", chosen, "--out", str(work / label), "--devices", devices)
            rows = batches(next((work / label).glob("*/manifest.jsonl")).parent)
            run.record(
                f"{chosen} on {devices}",
                walls[label],
                batches=[dict(row, start=row["start"] - began) for row in rows],
            )
        run.record(f"{chosen} all GPUs against one", speedup=walls["one_gpu"] / walls["all_gpus"])


@case("sweep-profile", needs="cuda", sweep="sweeps/bench64.yaml", devices="cuda:0", work="/tmp/timeline")
def sweep_profile(run) -> None:
    """Where a sweep's time goes: the sweep under cProfile, its process wall beside its batches
    (from the manifest, relative to the process start, each with its phases from a job's sidecar)
    and the main process's 25 most expensive calls by cumulative time. What is left between the
    process start and the first batch, and after the last, is the sweep's fixed cost."""
    tag = run.devices.replace(":", "").replace(",", "+")
    work = Path(run.work) / tag
    profile = work / "sweep.prof"
    shutil.rmtree(work, ignore_errors=True)  # a finished sweep there would skip its jobs
    work.mkdir(parents=True)
    began = time.time()
    command = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "physarum.render.cli"]
    subprocess.run(
        [*command, "sweep", run.sweep, "--out", str(work), "--devices", run.devices, "--quiet"], check=True
    )
    wall = time.time() - began
    text = io.StringIO()
    pstats.Stats(str(profile), stream=text).sort_stats("cumulative").print_stats(25)
    rows = batches(next(work.glob("*/manifest.jsonl")).parent)
    run.record(
        f"{Path(run.sweep).stem} on {run.devices}",
        wall,
        batches=[dict(row, start=round(row["start"] - began, 2)) for row in rows],
        profile_top25=text.getvalue().splitlines()[:60],
    )


def _kernels(cache: Path) -> int:
    """Compiled kernels in a Triton cache: its folders holding a kernel's metadata (.json)."""
    return sum(1 for folder in cache.iterdir() if any(folder.glob("*.json"))) if cache.is_dir() else 0


@case(
    "startup",
    presets="quickstart,labyrinth",
    backend="triton",
    device="cuda",
    times=5,
    set="",
    small={"presets": "quickstart", "backend": "torch", "device": "cpu", "times": 2, "set": "run.steps=20"},
)
def startup(run) -> None:
    """Process wall of the commands a user waits for (issue 25), each its own process (`python -m
    physarum.render.cli`, as the shell's `physarum`): `--help` and `presets` TIMES times; each
    preset rendered twice into one fresh TRITON_CACHE_DIR, cold (compiles every kernel) then warm
    (finds them on disk), beside the render's own time (the sidecar's timings.total_s) and the
    kernels in the cache (a warm run that adds kernels compiled them again)."""
    if run.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise Skip("--device cuda: no CUDA GPU here (--small: torch on the CPU)")
    env = dict(os.environ)

    def timed(args: list[str], env: dict) -> float:
        start = time.perf_counter()
        done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}")
        return time.perf_counter() - start

    for args in (["--help"], ["presets"]):
        run.record(" ".join(args), [timed(args, env) for _ in range(run.times)])
    with tempfile.TemporaryDirectory(prefix="startup-wall-") as folder:
        for preset in run.presets.split(","):
            cache = Path(folder) / f"triton-cache-{preset}"
            out = Path(folder) / f"out-{preset}"
            args = [
                "render",
                preset,
                "--backend",
                run.backend,
                "--device",
                run.device,
                "--out",
                str(out),
                "--quiet",
            ]
            args += [part for s in run.set.split(";") if s for part in ("--set", s)]
            for kind in ("cold", "warm"):
                wall = timed(args, {**env, "TRITON_CACHE_DIR": str(cache)})
                inside = json.loads(next((out / preset).glob("*.json")).read_text())["timings"]["total_s"]
                run.record(
                    f"render {preset}, {kind} Triton cache",
                    wall,
                    in_process_s=inside,
                    startup_and_exit_s=round(wall - inside, 2),
                    kernels_cached=_kernels(cache),
                )


@case(
    "resolution",
    preset="presets/anywhere.yaml",
    sizes="512x512,3840x2160",
    checkpoints=5,
    seeds=1,
    device="",
    set="",
    figure="",
    small={"sizes": "96x96,192x192", "set": "run.steps=60", "checkpoints": 2},
)
def resolution(run) -> None:
    """Does a preset in resolution-independent units look alike at two sizes? The preset at each
    size as one batched simulation of SEEDS seeds; the trail's dominant wavelength (render/tools/
    stats.py: radially averaged power spectrum) as a fraction of the short side at CHECKPOINTS late
    steps 10 apart: its mean per seed, the size's mean and spread over seeds and the ratio to the
    first size. --figure PNG: the final frames side by side (docs/figures/resolution-*.png)."""
    import numpy as np
    from PIL import Image

    from physarum.render.look.colour import Colourist
    from physarum.render.preset import load_preset
    from physarum.render.run.machine import resolve_backend, resolve_device
    from physarum.render.sim.simulation import make_batch_simulation
    from physarum.render.tools.stats import SpectrumRings, trail_statistics

    device = resolve_device(run.device)
    first, frames = None, []
    for size in run.sizes.split(","):
        width, height = (int(v) for v in size.split("x"))
        settings = [s for s in run.set.split(";") if s]
        base = load_preset(run.preset, [*settings, f"canvas.width={width}", f"canvas.height={height}"])
        presets = [base.model_copy(update={"seed": base.seed + k}) for k in range(run.seeds)]
        steps = base.run.steps
        began = time.perf_counter()
        simulation = make_batch_simulation(presets, resolve_backend("auto", device), device)
        rings = SpectrumRings(height, width, device)
        done, fractions = 0, []
        for step in sorted({steps - 10 * k for k in range(run.checkpoints)}):
            simulation.advance(step - done)
            done = step
            fractions.append(trail_statistics(simulation.trail, rings)[:, 6].cpu().numpy())  # 6: wavelength
        per_seed = np.mean(fractions, axis=0)
        colourist = Colourist(base.palette)
        frames.append(colourist.rgb(colourist.index_frame(simulation.trail[0]), 0).cpu().numpy())
        mean = float(per_seed.mean())
        first = first or mean
        run.record(
            f"{Path(run.preset).stem} {size}",
            time.perf_counter() - began,
            agents=base.agents.count,
            steps=steps,
            seeds=run.seeds,
            sensor_distance_px=base.model.pixels("sensor_distance", min(width, height)),
            step_size_px=base.model.pixels("step_size", min(width, height)),
            wavelength_fraction_per_seed=per_seed.tolist(),
            mean=mean,
            std=float(per_seed.std(ddof=1)) if run.seeds > 1 else 0.0,
            ratio_to_first=mean / first,
        )
    if run.figure:
        tiles = [Image.fromarray(f).resize((round(384 * f.shape[1] / f.shape[0]), 384)) for f in frames]
        sheet = Image.new("RGB", (sum(t.width for t in tiles) + 8 * (len(tiles) - 1), 384))
        x = 0
        for tile in tiles:
            sheet.paste(tile, (x, 0))
            x += tile.width + 8
        sheet.save(run.figure, optimize=True)


RAY_LOOPBACK = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def _ray_cluster(cpus: list[int], work: Path) -> tuple[str, list[str]]:
    """A local Ray cluster of one node per entry of `cpus` (that many CPUs each, no GPU), on
    127.0.0.2, .3, ... of the loopback network, each with its own temp folder: its address and
    the temp folders (for _stop_cluster)."""
    ray = str(Path(sys.executable).parent / "ray")
    temps: list[str] = []
    try:
        address = _start_nodes(ray, cpus, work, temps)
    except BaseException:  # the nodes started so far are stopped
        _stop_cluster(temps)
        raise
    return address, temps


def _start_nodes(ray: str, cpus: list[int], work: Path, temps: list[str]) -> str:
    """_ray_cluster's nodes started one by one, each temp folder added to `temps` first."""
    address = None
    for index, count in enumerate(cpus):
        temp = tempfile.mkdtemp(prefix="phray-", dir="/tmp")
        temps.append(temp)
        node = [f"--node-ip-address=127.0.0.{index + 2}", f"--temp-dir={temp}", f"--num-cpus={count}"]
        node += ["--num-gpus=0", "--object-store-memory=300000000", "--disable-usage-stats"]
        head = (
            ["--head", "--port=0", "--include-dashboard=false"]
            if address is None
            else [f"--address={address}"]
        )
        folder = work / f"node-{index}"
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [ray, "start", *head, *node],
            cwd=folder,
            env={**os.environ, **RAY_LOOPBACK},
            check=True,
            capture_output=True,
            timeout=180,
        )
        if address is None:
            address = (Path(temp) / "ray_current_cluster").read_text().strip()
    return address


def _stop_cluster(temps: list[str]) -> None:
    """Kill exactly the processes of the cluster of these temp folders (and their children), not
    every Ray of the machine (`ray stop` would)."""
    import ray  # noqa: F401  (puts its bundled psutil on the path)

    psutil = __import__("psutil")

    found = {}
    for process in psutil.process_iter(["pid", "cmdline"]):
        if any(temp in " ".join(process.info["cmdline"] or []) for temp in temps):
            found[process.pid] = process
            try:
                found.update({child.pid: child for child in process.children(recursive=True)})
            except psutil.Error:
                pass
    for process in found.values():
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(list(found.values()), timeout=30)
    for temp in temps:
        shutil.rmtree(temp, ignore_errors=True)


def _memory_parts(pid: int, peaks: dict) -> None:
    """The largest of each part of a process's resident memory seen so far (MiB): private
    (RssAnon: its heap), mapped files (RssFile: libraries) and shared memory (RssShmem: here Ray's
    object store, mapped into every client)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key = line.split(":")[0]
                if key in ("RssAnon", "RssFile", "RssShmem"):
                    peaks[key] = max(peaks.get(key, 0.0), int(line.split()[1]) / 1024)
    except OSError:  # it has just ended
        pass


def _ray_sweep(path: Path, address: str, out: Path) -> dict:
    """`physarum sweep PATH --ray ADDRESS` as its own process: its wall, the driver's peak RSS
    (wait4's ru_maxrss of that process: Ray's workers are the raylet's children, not its) and the
    peak of each part of it (_memory_parts, every 0.1 s), the span of its jobs in the manifest,
    the bytes of its files and where they ran."""
    command = [*CLI, "sweep", str(path), "--ray", address, "--out", str(out), "--no-gallery", "--quiet"]
    began = time.perf_counter()
    driver = subprocess.Popen(command, env={**os.environ, **RAY_LOOPBACK}, stdout=subprocess.DEVNULL)
    peaks: dict = {}
    while True:
        _memory_parts(driver.pid, peaks)
        ended, status, usage = os.wait4(driver.pid, os.WNOHANG)
        if ended:
            break
        time.sleep(0.1)
    wall = time.perf_counter() - began
    driver.returncode = os.waitstatus_to_exitcode(status)
    if driver.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {driver.returncode}")
    sweep_dir = next(out.glob("*/manifest.jsonl")).parent
    records = [json.loads(line) for line in (sweep_dir / "manifest.jsonl").read_text().splitlines()]
    done = [r for r in records if r["status"] == "done"]
    first = min(datetime.fromisoformat(r["time"]) for r in records if r["status"] == "running")
    last = max(datetime.fromisoformat(r["time"]) for r in done)
    files = [p for p in sweep_dir.rglob("*") if p.is_file() and p.name != "manifest.jsonl"]
    return {
        "wall": wall,
        "span": (last - first).total_seconds(),
        "jobs": len(done),
        "driver_peak_mib": usage.ru_maxrss / 1024,  # KiB on Linux
        "driver_peak_private_mib": round(peaks.get("RssAnon", 0.0), 1),
        "driver_peak_shared_mib": round(peaks.get("RssShmem", 0.0), 1),
        "driver_peak_files_mib": round(peaks.get("RssFile", 0.0), 1),
        "file_mib": sum(p.stat().st_size for p in files) / 2**20,
        "largest_file_mib": max(p.stat().st_size for p in files) / 2**20,
        "jobs_per_node": sorted(
            [sum(1 for r in done if r["node"] == node) for node in {r["node"] for r in done}], reverse=True
        ),
    }


def _write_sweep(folder: Path, name: str, base: dict, jobs: int) -> Path:
    """A sweep of `jobs` jobs (model.sensor_angle x model.turn_angle, 8 wide) over `base`."""
    import yaml

    angles = [10 + 10 * i for i in range(8)]
    rows = max(1, jobs // 8)
    grid = {
        "model.sensor_angle": angles[: min(8, jobs)],
        "model.turn_angle": [5 + 5 * i for i in range(rows)],
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "base": base, "grid": grid}, sort_keys=False))
    return path


@case(
    "sweep-ray",
    size=192,
    agents=20000,
    steps=1200,
    jobs=64,
    big_size=512,
    big_frames=60,
    big_jobs=56,
    parts="rate,files",
    work="/tmp/sweep-ray-bench",
    small={"size": 64, "agents": 2000, "steps": 100, "jobs": 8, "big_size": 128, "big_jobs": 8},
)
def sweep_ray(run) -> None:
    """A Ray sweep's throughput and its driver's memory on local clusters of this machine (issue
    35): JOBS jobs of SIZE^2, AGENTS agents, STEPS steps (GIF + PNG; about 2 s a job alone on 2
    cores) on one node of 2 CPUs, then on two nodes of 1 CPU each (both on the same cores: the
    ratio measures the second node's overhead, not scaling), as jobs per minute of the jobs'
    span in the manifest and of the driver's wall; then BIG_JOBS jobs each writing a MOV of
    BIG_SIZE^2 x BIG_FRAMES frames (ProRes 4444, about 17 MiB; about 1 GB in all) through the
    object store (--files driver) on the two nodes, then as many of 64^2 (small files), with the
    driver's peak RSS and its parts: a driver holding a batch's files would grow by them. PARTS:
    rate, files or both."""
    work = Path(run.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    base = {
        "seed": 1,
        "canvas": {"width": run.size, "height": run.size},
        "agents": {"count": run.agents},
        "run": {"steps": run.steps, "steps_per_frame": run.steps // 10},
        "output": {"formats": ["gif", "png"]},
    }
    small = _write_sweep(work, "rate", base, run.jobs)
    big_base = {
        "seed": 1,
        "canvas": {"width": run.big_size, "height": run.big_size},
        "agents": {"count": 2000},
        "run": {"steps": run.big_frames, "steps_per_frame": 1},
        "output": {"formats": ["mov"]},
    }
    big = _write_sweep(work, "files", big_base, run.big_jobs)
    tiny = _write_sweep(work, "tiny", dict(big_base, canvas={"width": 64, "height": 64}), run.big_jobs)
    parts = run.parts.split(",")
    rates = {}
    for label, cpus in (("one node of 2 CPUs", [2]), ("two nodes of 1 CPU", [1, 1])):
        if "rate" not in parts and len(cpus) == 1:
            continue
        address, temps = _ray_cluster(cpus, work / label.replace(" ", "-"))
        try:
            if "rate" in parts:
                seen = _ray_sweep(small, address, work / f"out-{len(cpus)}")
                rates[len(cpus)] = seen["jobs"] / seen["span"] * 60
                run.record(
                    f"{run.jobs} jobs {run.size}px {run.agents} agents {run.steps} steps on {label}",
                    seen["wall"],
                    peak_mib=seen["driver_peak_mib"],
                    peak_kind="driver rss",
                    jobs_per_minute=round(rates[len(cpus)], 1),
                    jobs_per_minute_wall=round(seen["jobs"] / seen["wall"] * 60, 1),
                    **seen,
                )
            if "files" in parts and len(cpus) == 2:
                for sweep_file, size in ((big, run.big_size), (tiny, 64)):
                    files = _ray_sweep(sweep_file, address, work / f"out-{sweep_file.stem}")
                    run.record(
                        f"{run.big_jobs} MOVs {size}px x {run.big_frames} through the object store on {label}",
                        files["wall"],
                        peak_mib=files["driver_peak_mib"],
                        peak_kind="driver rss",
                        **files,
                    )
        finally:
            _stop_cluster(temps)
    if len(rates) == 2:
        run.record("two nodes against one (same 2 cores)", ratio=round(rates[2] / rates[1], 3))
