"""The machine: memory checked before allocating, backends that need what is not there."""

from __future__ import annotations

import pytest
import yaml

from physarum import kernels
from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from physarum.render.preset import build_preset
from physarum.render.run import machine
from physarum.render.run.machine import check_memory
from support import TINY, tiny_data, world_data


def test_memory_is_checked_before_allocating():
    huge = build_preset(tiny_data(canvas={"width": 16384, "height": 16384}, agents={"count": 1 << 28}), "p")
    with pytest.raises(RenderError, match=r"needs about \d+\.\d GiB on cpu .* GiB are free"):
        check_memory(huge, "torch", __import__("torch").device("cpu"))


def test_memory_estimate_counts_groups_and_maps(images):
    plain = build_preset(tiny_data(), "p")
    world = build_preset(world_data(), str(images / "p.yaml"))
    assert machine.estimated_bytes(world, "torch") > machine.estimated_bytes(plain, "torch")
    four = build_preset(tiny_data(species=[{}] * 4), "p")
    assert machine.estimated_bytes(four, "torch", 2) > machine.estimated_bytes(plain, "torch", 2)


def test_memory_estimate_counts_a_crossfade_loops_kept_maps():
    plain = build_preset(tiny_data(), "p")
    loop = build_preset(tiny_data(output={"loop_mode": "crossfade", "loop_frames": 3}), "p")
    cells = plain.canvas.width * plain.canvas.height
    assert (
        machine.estimated_bytes(loop, "torch", 2) - machine.estimated_bytes(plain, "torch", 2)
        == 2 * 3 * cells * 4
    )


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_ping_pong_loops_replay_store_is_in_the_memory_check(monkeypatch, device):
    """Frames 1 .. F-2 kept to replay (host memory, bounded as stored uncompressed): a 4096^2
    ping-pong of 10000 frames to GIF and MP4 needs ~650 GiB and was accepted; here free memory
    is set so that only the store can refuse: the device has room for the simulation."""
    import torch

    from physarum.render.look.loops import replay_bytes

    data = tiny_data(
        canvas={"width": 4096, "height": 4096},
        run={"steps": 10000, "steps_per_frame": 1},
        output={"formats": ["gif", "mp4"], "loop_mode": "ping-pong"},
    )
    preset = build_preset(data, "p")
    replay = replay_bytes(preset)
    assert replay >= 9998 * 4096 * 4096 * 4 and replay > 600 * 2**30
    gif_only = build_preset({**data, "output": {**data["output"], "formats": ["gif"]}}, "p")
    assert replay_bytes(gif_only) < replay / 3 < replay_bytes(gif_only, rgb=True)
    plain = build_preset({**data, "output": {**data["output"], "loop_mode": "none"}}, "p")
    assert replay_bytes(plain) == 0
    room = machine.estimated_bytes(preset, "torch", 2)
    host = room + replay * 3 // 2  # the host's free memory: one job's store, not two
    monkeypatch.setattr(machine, "available_bytes", lambda where: host if where.type == "cpu" else room)
    check_memory(preset, "torch", torch.device(device), batch=1)  # room for one job's store
    with pytest.raises(RenderError, match=r"ping-pong keeps its 10000 frames .* GiB of host memory"):
        check_memory(preset, "torch", torch.device(device), batch=2)  # not for two


def test_cli_triton_without_gpu_is_a_clear_error(write_yaml, capsys, monkeypatch):
    # not by unsetting TRITON_INTERPRET: Triton reads it once, at import, for the whole process
    triton_backend = pytest.importorskip("physarum.kernels.triton_backend")
    monkeypatch.setattr(triton_backend, "interpreter_mode", lambda: False)
    path = write_yaml(yaml.safe_dump(TINY))
    code = main(["render", str(path), "--backend", "triton", "--device", "cpu"])
    assert code == 2 and "needs a CUDA GPU" in capsys.readouterr().err


def test_backends_are_resolved_from_the_registry(monkeypatch):
    cpu = __import__("torch").device("cpu")
    assert machine.resolve_backend("auto", cpu) == "torch"  # the interpreter is never chosen by itself
    with pytest.raises(RenderError, match=r"--backend 'numpy': choose auto, torch, triton"):
        machine.resolve_backend("numpy", cpu)

    class Abacus:
        @staticmethod
        def unusable_on(device):
            return None if device.type == "cpu" else "counts beads on the CPU only"

    monkeypatch.setitem(kernels.BACKENDS, "abacus", Abacus)
    assert machine.resolve_backend("abacus", cpu) == "abacus"
    with pytest.raises(RenderError, match="--backend abacus: counts beads on the CPU only"):
        machine.resolve_backend("abacus", __import__("torch").device("cuda"))


def test_cpu_threads_are_a_share_of_the_cores_never_more_than_torch_has(monkeypatch):
    torch = __import__("torch")
    calls = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    monkeypatch.setattr(machine, "host_cores", lambda: 16)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 16)
    assert machine.limit_cpu_threads() == 8 and machine.limit_cpu_threads(4) == 4
    assert machine.limit_cpu_threads(64) == 1
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert machine.limit_cpu_threads(2) == 2
    assert calls == [8, 4, 1, 2]


def test_a_batch_shares_the_cores_among_its_encoder_processes(monkeypatch):
    monkeypatch.setattr(machine.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    slices = [machine.encoder_cores(job, 3) for job in range(3)]
    assert slices == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14, 15]]
    assert machine.encoder_cores(0, 1) is None
    assert [machine.encoder_cores(job, 20) for job in (0, 15, 16, 19)] == [[0], [15], [0], [3]]


@pytest.mark.parametrize(
    ("requested", "words"),
    [("mps", "MPS is not supported.*--device cpu"), ("xpu", "only cpu and cuda"), ("gpu", "not a device")],
)
def test_a_device_the_contract_does_not_cover_is_refused_saying_what_to_use(requested, words):
    with pytest.raises(RenderError, match=words):
        machine.resolve_device(requested)


def _cube(side: int, agents: int):
    from support import tiny_3d

    data = tiny_3d(canvas={"width": side, "height": side, "depth": side}, agents={"count": agents})
    return build_preset(data, "cube.yaml")


@pytest.mark.parametrize("side, agents, peak_gib", [(256, 1 << 24, 1.44), (512, 1 << 26, 5.75)])
def test_a_3d_preset_is_sized_by_the_3d_backend(side, agents, peak_gib):
    """The 3D Triton step's peak measured on an H200 (benchmarks/unreleased/3d.json):
    1.44 GiB at 256^3/16M, 5.75 GiB at 512^3/64M; the estimate covers it, within 1.5x. The 2D
    class's estimate (4.5 GiB at 512^3) was below the peak."""
    estimate = machine.simulation_bytes(_cube(side, agents), "triton") / 2**30
    assert peak_gib <= estimate <= 1.5 * peak_gib
    per_agent, per_cell = kernels.get_backend("torch", 3).device_bytes(agents)
    expected = agents * per_agent + side**3 * per_cell
    assert machine.simulation_bytes(_cube(side, agents), "torch") == int(expected)


def test_a_backend_without_a_3d_class_is_refused_for_a_3d_preset(monkeypatch):
    monkeypatch.setitem(kernels.BACKENDS, "abacus", kernels.get_backend("torch"))
    with pytest.raises(
        RenderError, match=r"--backend abacus has no 3D simulation; choose one of torch, triton"
    ):
        machine.estimated_bytes(_cube(16, 600), "abacus")


def test_an_oversize_3d_render_is_refused_before_spawning(tmp_path, capsys, monkeypatch):
    from physarum.render.run import runner
    from support import tiny_3d

    data = tiny_3d(canvas={"width": 512, "height": 512, "depth": 512}, agents={"count": 1 << 26})
    path = tmp_path / "cube.yaml"
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setattr(machine, "available_bytes", lambda where: 8 * 2**30)
    monkeypatch.setattr(runner, "make_batch_simulation", lambda *a, **k: pytest.fail("spawned"))
    out = tmp_path / "out"
    assert main(["render", str(path), "--out", str(out), "--backend", "torch", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "canvas 512x512x512 with 67108864 agents needs about" in err and "8.0 GiB are free" in err
    assert err.count("error:") == 1 and "Traceback" not in err
    assert not out.exists() or not any(p.is_file() for p in out.rglob("*"))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_2d_space_time_stack_is_in_the_memory_check(monkeypatch, device):
    """A 2D preset's output.volume keeps its shown frames on the host and writes them as one
    stack (float32 copies; a mesh's marching cubes and OBJ lines at their worst): a 256^2 stack of
    200 frames with a mesh takes up to ~10 GiB, and was not counted."""
    import torch

    from physarum.render.out.volume_export import stack_bytes

    data = tiny_data(canvas={"width": 256, "height": 256}, run={"steps": 200, "steps_per_frame": 1})
    plain = build_preset(data, "p")
    stacked = build_preset({**data, "output": {**data["output"], "volume": {"formats": ["npz", "obj"]}}}, "p")
    assert stack_bytes(plain) == 0 and stack_bytes(stacked) >= 200 * 256 * 256 * 700
    room = machine.estimated_bytes(stacked, "torch") + 2**30  # room for all but the stack
    monkeypatch.setattr(machine, "available_bytes", lambda where: room)
    check_memory(plain, "torch", torch.device(device))
    with pytest.raises(
        RenderError, match=r"output.volume: the space-time stack of 200 frames .* GiB of host memory"
    ):
        check_memory(stacked, "torch", torch.device(device))
    flat = build_preset({**data, "output": {**data["output"], "volume": {"formats": ["npz"]}}}, "p")
    check_memory(flat, "torch", torch.device(device))  # 24 bytes a voxel: 0.3 GiB
