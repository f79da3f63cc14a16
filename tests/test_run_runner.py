"""The runner: render and render_batch, from a preset to finished files and their sidecar."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import av
import numpy as np
import pytest
import yaml
from PIL import Image

from physarum.render.base.errors import RenderError
from physarum.render.formats import frames_dir, png
from physarum.render.formats.mp4 import Mp4Writer
from physarum.render.formats.registry import read_embedded
from physarum.render.look.colour import make_colourist
from physarum.render.out.encoder_process import EncoderProcess
from physarum.render.out.specs import check_outputs
from physarum.render.preset import PresetError, build_preset, load_preset
from physarum.render.run import runner
from physarum.render.sim.simulation import batch_key
from support import CURATED, ROOT, WORLD, block, render_cpu, render_tiny, tiny_data, world_data


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


FORMAT_SETS = [list(c) for n in (1, 2, 3) for c in itertools.combinations(("gif", "mp4", "png"), n)]


@pytest.mark.parametrize("frames_dir", [False, True], ids=["files", "frames-dir"])
@pytest.mark.parametrize("formats", FORMAT_SETS, ids="+".join)
def test_a_batch_of_any_formats_renders_each_job_as_alone(tmp_path, formats, frames_dir):
    """Every combination of formats (and a frames folder or not) in a batch of two jobs: each
    job writes its formats' files and no others, byte for byte those of the job rendered alone
    (the batch encodes in a child process per job, a render of one in its own process)."""
    presets = [
        build_preset(
            tiny_data(name=f"job{i}", seed=i, run={"steps": 9}, output={"formats": formats}), "t.yaml"
        )
        for i in range(2)
    ]
    runs = {"batch": [], "alone": []}
    for run in runs:
        options = dict(backend="torch", device="cpu", out_dir=tmp_path / run / "out", quiet=True)
        if frames_dir:
            options["frames_dir"] = tmp_path / run / "frames"
        if run == "batch":
            runs[run] = runner.render_batch(presets, **options)
        else:
            runs[run] = [runner.render(preset, **options) for preset in presets]
    assert [r.error for r in runs["batch"]] == [None, None]
    for preset, result in zip(presets, runs["batch"]):
        stem = tmp_path / "batch" / "out" / preset.name / f"{preset.name}-s{preset.seed}"
        assert result.outputs == {fmt: stem.with_suffix(f".{fmt}") for fmt in [*formats, "json"]}
        sidecar = json.loads(result.outputs["json"].read_text())
        assert sorted(sidecar["outputs"]) == sorted(formats)
    for run, results in runs.items():
        written = files_under(tmp_path / run)
        expected = [path for result in results for path in result.outputs.values()]
        frames = sorted((tmp_path / run / "frames").glob("*.png")) if frames_dir else []
        assert len(frames) == (2 * presets[0].frames if frames_dir else 0)
        assert written == sorted([*expected, *frames]), run
    for name in sorted(p.relative_to(tmp_path / "alone") for p in files_under(tmp_path / "alone")):
        if name.suffix != ".json":  # a sidecar's timings differ
            assert (tmp_path / "batch" / name).read_bytes() == (tmp_path / "alone" / name).read_bytes(), name
    for fmt in formats:
        assert runs["batch"][0].outputs[fmt].read_bytes() != runs["batch"][1].outputs[fmt].read_bytes()


def test_render_writes_every_format_and_a_sidecar(tmp_path):
    result = render_tiny(tmp_path)
    assert sorted(result.outputs) == ["gif", "json", "mp4", "png"]
    sidecar = json.loads(result.outputs["json"].read_text())
    assert sidecar["seed"] == 3 and sidecar["backend"] == "torch" and sidecar["frames"] == 8
    assert sidecar["outputs"]["gif"]["bytes"] == result.outputs["gif"].stat().st_size
    assert result.outputs["gif"] == tmp_path / "tiny" / "tiny-s3.gif"
    assert not list(tmp_path.rglob(".*.part"))


def test_same_preset_and_seed_give_identical_bytes(tmp_path):
    first = render_tiny(tmp_path / "a").outputs
    second = render_tiny(tmp_path / "b").outputs
    for fmt in ("gif", "mp4", "png"):
        assert first[fmt].read_bytes() == second[fmt].read_bytes(), fmt
    other_seed = render_tiny(tmp_path / "c", seed=4).outputs
    assert other_seed["png"].read_bytes() != first["png"].read_bytes()


def test_encoder_failure_stops_the_render_and_removes_partial_files(tmp_path, monkeypatch):
    def broken(self, frame):
        raise OSError("disk full")

    monkeypatch.setattr(Mp4Writer, "write", broken)
    with pytest.raises(RenderError, match="tiny-s3.mp4: encoder failed: disk full"):
        render_tiny(tmp_path, run={"steps": 60, "steps_per_frame": 1})
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.slow
def test_killed_render_leaves_no_truncated_file(tmp_path):
    preset = tmp_path / "slow.yaml"
    preset.write_text(
        yaml.safe_dump(
            tiny_data(
                name="slow",
                canvas={"width": 256, "height": 256},
                agents={"count": 50000},
                run={"steps": 4000, "steps_per_frame": 2},
            )
        )
    )
    out = tmp_path / "o"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "physarum.render.cli",
            "render",
            str(preset),
            "--out",
            str(out),
            "--quiet",
            "--backend",
            "torch",
        ],
        cwd=ROOT,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not list(out.rglob(".*.part")):
        time.sleep(0.05)
    time.sleep(0.5)
    assert list(out.rglob(".*.part")), "the render never started writing"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    finals = [p for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert finals == []


def test_gif_preview_scale_and_frames_dir(tmp_path):
    from PIL import Image

    preset = build_preset(
        tiny_data(canvas={"width": 64, "height": 40}, output={"gif_scale": 0.5}), "tiny.yaml"
    )
    frames = tmp_path / "frames"
    result = runner.render(
        preset, backend="torch", device="cpu", out_dir=tmp_path / "o", quiet=True, frames_dir=frames
    )
    with Image.open(result.outputs["gif"]) as gif:
        assert gif.size == (32, 20) and gif.n_frames == 8
    sequence = sorted(frames.iterdir())
    assert [p.name for p in sequence] == [f"tiny-s3-{i:05d}.png" for i in range(1, 9)]
    with Image.open(sequence[-1]) as last, Image.open(result.outputs["png"]) as still:
        assert last.size == (64, 40)
        assert last.tobytes() == still.tobytes()


def test_png_still_carries_its_print_resolution(tmp_path):
    from PIL import Image

    plain = render_tiny(tmp_path / "plain")
    printed = render_tiny(tmp_path / "print", output={"formats": ["png"], "png_dpi": 300})
    with Image.open(printed.outputs["png"]) as image:
        assert image.info["dpi"] == pytest.approx((300, 300), abs=0.01)  # pHYs holds dots per metre
        pixels = image.convert("RGB").tobytes()
    with Image.open(plain.outputs["png"]) as image:
        assert "dpi" not in image.info  # unset: no pHYs chunk, the bytes as before
        assert image.convert("RGB").tobytes() == pixels  # the same picture either way
    assert "png_dpi" not in plain.outputs["json"].read_text()
    with pytest.raises(PresetError, match="output.png_dpi"):
        build_preset(tiny_data(output={"png_dpi": 0}), "tiny.yaml")


def test_mp4_sizes():
    odd = build_preset(tiny_data(canvas={"width": 49, "height": 33}), "p")
    assert check_outputs(odd) == ["mp4 padded from 49x33 to 50x34 (H.264 needs even sides)"]
    sharp = build_preset(tiny_data(canvas={"width": 49, "height": 33}, output={"mp4": "browser-sharp"}), "p")
    assert check_outputs(sharp) == []  # 98x66: even as it is
    wide = build_preset(tiny_data(canvas={"width": 9000, "height": 64}), "p")
    with pytest.raises(RenderError, match="at most 8192 pixels per side"):
        check_outputs(wide)
    big = build_preset(tiny_data(canvas={"width": 4200, "height": 64}, output={"mp4": "browser-sharp"}), "p")
    with pytest.raises(
        RenderError, match=r"4200x64 \(output.mp4 browser-sharp: 8400x128\).*output.mp4: browser"
    ):
        check_outputs(big)


def test_webp_and_mp4_settings_render_from_the_preset(tmp_path):
    result = render_tiny(tmp_path, output={"formats": ["webp", "mp4"], "mp4": "master"})
    with Image.open(result.outputs["webp"]) as image:
        webp = np.asarray(image.convert("RGB"))  # the first frame, exact
    with av.open(str(result.outputs["mp4"])) as container:
        first = next(container.decode(video=0)).to_ndarray(format="rgb24")
    np.testing.assert_array_equal(first[: webp.shape[0], : webp.shape[1]], webp)  # both lossless
    assert read_embedded(result.outputs["webp"]) == read_embedded(result.outputs["mp4"])


# The curated presets of about 6 s each on a 2-core CPU; the fast tier (pytest -m "not slow")
# renders the others.
SLOW_CURATED = {"cocoon", "panorama", "tangle"}


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=p.stem, marks=[pytest.mark.slow] * (p.stem in SLOW_CURATED)) for p in CURATED]
)
def test_curated_presets_render_a_few_steps(path: Path, tmp_path):
    from fractions import Fraction

    from physarum.render.preset.reduce import reduce_preset
    from physarum.render.run.runner import render

    settings = ["run.steps=2", "run.steps_per_frame=1", "run.warmup=0"]
    if load_preset(path).dims == 3:  # a small frame of the volume (480^2 rays are slow on a CPU)
        settings += ["camera.width=48", "camera.height=40", "camera.samples=32"]
    preset = load_preset(path, settings)
    if preset.dims == 3 and preset.canvas.depth > 256:  # cosmos: 25 GiB on a CPU; its volume / 4
        preset = reduce_preset(preset, Fraction(1, 4), "reduce")[0]
        assert preset.canvas.depth <= 128
    result = render(preset, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    for fmt in preset.output.formats:
        assert result.outputs[fmt].stat().st_size > 0
    assert json_frames(result.outputs["json"]) == 2


def json_frames(path: Path) -> int:
    import json

    return json.loads(path.read_text())["frames"]


def test_two_species_render_writes_gif_mp4_png_and_repeats_exactly(images):
    preset = build_preset(world_data(), str(images / "p.yaml"))
    first = render_cpu(preset, images / "a").outputs
    with Image.open(first["gif"]) as gif:
        assert gif.n_frames == 4 and gif.size == (48, 32)
        palette = np.array(gif.getpalette()[:768], dtype=np.uint8).reshape(256, 3)
        assert (palette == make_colourist(preset).table(0)).all()
    with av.open(str(first["mp4"])) as container:
        assert sum(1 for _ in container.decode(video=0)) == 4
    with Image.open(first["png"]) as png:
        pixels = np.asarray(png.convert("RGB"))
        assert pixels.shape == (32, 48, 3) and not pixels[:, :16].any() and pixels[:, 16:].any()
    second = render_cpu(preset, images / "b").outputs
    for fmt in ("gif", "mp4", "png"):
        assert first[fmt].read_bytes() == second[fmt].read_bytes(), fmt
    sidecar = json.loads(first["json"].read_text())
    assert sidecar["preset"]["world"]["walls"]["path"] == str(images / "wall.png")


def test_a_batch_of_world_presets_renders_each_as_alone(images):
    second_world = {**WORLD, "walls": {"path": "wall.png", "invert": True}, "trail_image": None}
    presets = [
        build_preset(world_data(name="one"), str(images / "p.yaml")),
        build_preset(
            world_data(name="two", seed=8, world=second_world, interaction=[[1.0, 0.25], [2.0, -1.0]]),
            str(images / "p.yaml"),
        ),
    ]
    assert batch_key(presets[0]) == batch_key(presets[1])
    batch = runner.render_batch(presets, backend="torch", device="cpu", out_dir=images / "batch", quiet=True)
    assert [r.error for r in batch] == [None, None]
    for preset, result in zip(presets, batch):
        alone = render_cpu(preset, images / "alone").outputs
        for fmt in ("gif", "png"):  # MP4 bytes: see test_sweep's batch test (x264 per process)
            assert result.outputs[fmt].read_bytes() == alone[fmt].read_bytes(), (preset.name, fmt)
    assert batch[0].outputs["png"].read_bytes() != batch[1].outputs["png"].read_bytes()


@pytest.mark.interpreter(cpu=True)
@pytest.mark.slow
def test_triton_in_the_interpreter_renders_a_world_preset_byte_for_byte(images):
    preset = build_preset(world_data(), str(images / "p.yaml"))
    outputs = {
        backend: runner.render(
            preset, backend=backend, device="cpu", out_dir=images / backend, quiet=True
        ).outputs
        for backend in ("torch", "triton")
    }
    for fmt in ("gif", "png"):
        assert outputs["torch"][fmt].read_bytes() == outputs["triton"][fmt].read_bytes(), fmt


def test_one_species_with_a_palette_shows_the_plain_render(tmp_path):
    plain = build_preset(tiny_data(palette={"names": ["magma"]}), "p.yaml")
    one = build_preset(tiny_data(palette={"names": ["magma"]}, species=[{"palette": "magma"}]), "p.yaml")
    assert batch_key(one) == batch_key(plain)
    outputs = [render_cpu(preset, tmp_path / str(i)).outputs for i, preset in enumerate((plain, one))]
    for fmt in ("gif", "png"):
        with Image.open(outputs[0][fmt]) as a, Image.open(outputs[1][fmt]) as b:
            for frame in range(getattr(a, "n_frames", 1)):
                a.seek(frame)
                b.seek(frame)
                assert np.array_equal(np.asarray(a.convert("RGB")), np.asarray(b.convert("RGB"))), (
                    fmt,
                    frame,
                )


# Batched renders (runner.render_batch): each job byte for byte as rendered alone, one failing
# encoder failing only its job, every job's input ended before any is waited for.


@pytest.mark.slow
def test_a_batch_renders_each_job_byte_for_byte_as_physarum_render_alone(tmp_path):
    # Compared with `physarum render --from` in fresh processes: the bytes x264 writes in a
    # process that already ran other encoders can differ (render/out/encoder_process.py), so the
    # batch encodes each job's outputs in a process of its own, as a single render does.
    spawns, palettes = ["random", "disk", "ring"], [["magma"], ["ice", "fire"], ["cave"]]
    presets = [
        build_preset(
            tiny_data(
                name=f"job{i}",
                seed=10 + i,
                agents={"spawn": spawns[i]},
                model={"sensor_angle": 15 + 20 * i, "decay": 0.05 * (i + 1)},
                palette={"names": palettes[i]},
            ),
            "t.yaml",
        )
        for i in range(3)
    ]
    batch = runner.render_batch(
        presets, backend="torch", device="cpu", out_dir=tmp_path / "batch", quiet=True
    )
    assert [r.error for r in batch] == [None] * 3
    alone = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "physarum.render.cli",
                "render",
                "--from",
                str(result.outputs["json"]),
                "--out",
                str(tmp_path / "alone"),
                "--quiet",
                "--backend",
                "torch",
                "--device",
                "cpu",
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        for result in batch
    ]
    assert [process.wait(timeout=120) for process in alone] == [0] * 3
    for preset, result in zip(presets, batch):
        for fmt in ("gif", "mp4", "png"):
            single = tmp_path / "alone" / preset.name / result.outputs[fmt].name
            assert result.outputs[fmt].read_bytes() == single.read_bytes(), (preset.name, fmt)
        assert json.loads(result.outputs["json"].read_text())["preset"] == preset.model_dump(mode="json")
    assert batch[0].outputs["png"].read_bytes() != batch[1].outputs["png"].read_bytes()
    with pytest.raises(ValueError, match="group them by batch_key"):
        runner.render_batch(
            [presets[0], build_preset(tiny_data(name="other", run={"steps": 30}), "t")],
            backend="torch",
            device="cpu",
            out_dir=tmp_path / "mixed",
            quiet=True,
        )


def test_one_failing_encoder_fails_only_its_job(tmp_path):
    presets = [build_preset(tiny_data(name=f"job{i}", seed=i), "t.yaml") for i in range(3)]
    block(tmp_path / "job1" / "job1-s1.gif")
    results = runner.render_batch(presets, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    assert [r.error is None for r in results] == [True, False, True]
    assert "job1-s1" in results[1].error and "Is a directory" in results[1].error
    assert results[1].outputs == {}
    assert files_under(tmp_path / "job1") == [] and (tmp_path / "job1" / "job1-s1.gif").is_dir()
    for result in (results[0], results[2]):
        with Image.open(result.outputs["gif"]) as gif:
            assert gif.n_frames == 8


def test_a_batch_ends_every_jobs_input_before_it_waits_for_any(tmp_path):
    """The children then write their last files side by side, not one after another."""
    from physarum.render.out.encoder_process import EncoderProcess

    calls = []
    end_input, complete = EncoderProcess.end_input, EncoderProcess.complete

    def ending(process):
        calls.append(("end", process.path.name))
        end_input(process)

    def completing(process):  # waits for the child's files
        calls.append(("wait", process.path.name))
        return complete(process)

    presets = [build_preset(tiny_data(name=f"job{i}", seed=i), "t.yaml") for i in range(3)]
    with (
        mock.patch.object(EncoderProcess, "end_input", ending),
        mock.patch.object(EncoderProcess, "complete", completing),
    ):
        results = runner.render_batch(presets, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    assert all(r.error is None for r in results)
    first_wait = next(i for i, (kind, _) in enumerate(calls) if kind == "wait")
    assert {name for kind, name in calls[:first_wait]} == {"job0-s0", "job1-s1", "job2-s2"}
    assert sorted(name for kind, name in calls if kind == "wait") == ["job0-s0", "job1-s1", "job2-s2"]


# Earlier outputs and partial files (docs/safety.md): a render replaces its earlier files all at
# once or not at all, never writes through a link planted at a temporary name, and removes the
# temporary files that killed runs left.


def outputs_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in files_under(folder)}


def test_earlier_files_survive_a_render_that_fails_in_its_last_writer(tmp_path, monkeypatch):
    render_tiny(tmp_path)
    earlier = outputs_of(tmp_path)
    assert sorted(earlier) == ["tiny-s3.gif", "tiny-s3.json", "tiny-s3.mp4", "tiny-s3.png"]

    def disk_full(*args, **kwargs):  # the PNG still is written last, when the frames are done
        raise OSError("disk full")

    monkeypatch.setattr(png, "save_png", disk_full)
    with pytest.raises(RenderError, match="disk full"):
        render_tiny(tmp_path, palette={"names": ["ice"]})
    assert outputs_of(tmp_path) == earlier


def test_a_failing_job_of_a_batch_keeps_its_earlier_files(tmp_path):
    presets = [build_preset(tiny_data(name=f"job{i}", seed=i), "t.yaml") for i in range(2)]
    runner.render_batch(presets, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    earlier = outputs_of(tmp_path / "job1")
    (tmp_path / "job1" / "job1-s1.png").unlink()
    block(tmp_path / "job1" / "job1-s1.png")  # a folder in the way of the last output
    del earlier["job1-s1.png"]
    results = runner.render_batch(presets, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    assert results[0].error is None and "Is a directory" in results[1].error
    assert outputs_of(tmp_path / "job1") == earlier


def test_a_link_planted_at_a_temporary_name_is_not_written_through(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    folder = tmp_path / "o" / "tiny"
    folder.mkdir(parents=True)
    for fmt in ("gif", "mp4", "png", "json"):
        (folder / f".tiny-s3.{fmt}.{os.getpid()}.part").symlink_to(outside)
    result = render_tiny(tmp_path / "o")
    assert outside.read_text() == "keep me"
    for fmt in ("gif", "mp4", "png", "json"):
        assert result.outputs[fmt].is_file() and not result.outputs[fmt].is_symlink()
    assert sorted(p.name for p in folder.iterdir()) == [f"tiny-s3.{f}" for f in ("gif", "json", "mp4", "png")]


def test_a_render_removes_the_stale_parts_of_killed_runs_beside_its_outputs(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    folder = tmp_path / "tiny"
    folder.mkdir()
    stale = folder / f".tiny-s3.mp4.{int(dead.stdout)}.part"
    live = folder / f".tiny-s3.mp4.{os.getppid()}.part"  # a running process's: not ours to remove
    for part in (stale, live):
        part.write_bytes(b"half a file")
    render_tiny(tmp_path)
    assert not stale.exists() and live.exists()


def test_replacing_earlier_files_is_reported(tmp_path):
    assert render_tiny(tmp_path).replaced == []
    again = render_tiny(tmp_path)
    assert sorted(p.name for p in again.replaced) == [f"tiny-s3.{f}" for f in ("gif", "json", "mp4", "png")]


@pytest.mark.parametrize(
    "kind", [signal.SIGTERM, pytest.param(signal.SIGHUP, marks=pytest.mark.slow)], ids=lambda s: s.name
)
def test_sigterm_and_sighup_end_a_render_cleanly(tmp_path, kind):
    preset = tmp_path / "slow.yaml"
    preset.write_text(
        yaml.safe_dump(
            tiny_data(
                name="slow",
                canvas={"width": 128, "height": 128},
                agents={"count": 20000},
                run={"steps": 4000, "steps_per_frame": 2},
            )
        )
    )
    out = tmp_path / "o"
    process = subprocess.Popen(
        [sys.executable, "-m", "physarum.render.cli", "render", str(preset), "--out", str(out)]
        + ["--quiet", "--backend", "torch", "--device", "cpu"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not list(out.rglob(".*.part")):
        time.sleep(0.05)
    assert list(out.rglob(".*.part")), "the render never started writing"
    process.send_signal(kind)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + kind
    assert f"terminated ({kind.name}); no partial output was left" in stderr.decode()
    assert "Traceback" not in stderr.decode()
    assert files_under(out) == []


def test_a_batch_of_budgeted_gifs_is_the_renders_alone_with_their_choice_in_the_sidecar(tmp_path):
    # in a batch each job's GIF is written in its encoder process, which reports the choice back
    presets = [
        build_preset(
            tiny_data(name=f"job{i}", seed=20 + i, output={"formats": ["gif"], "gif_max_bytes": 5000}), "t"
        )
        for i in range(2)
    ]
    batch = runner.render_batch(
        presets, backend="torch", device="cpu", out_dir=tmp_path / "batch", quiet=True
    )
    alone = render_cpu(presets[1], tmp_path / "alone")
    for result in batch:
        record = json.loads(result.outputs["json"].read_text())
        assert record["gif_budget"]["bytes"] == result.outputs["gif"].stat().st_size <= 5000
    assert batch[1].outputs["gif"].read_bytes() == alone.outputs["gif"].read_bytes()


@pytest.mark.parametrize("where", ["writer", "child"])
def test_memory_that_runs_out_in_a_jobs_writer_is_the_one_clear_message(tmp_path, monkeypatch, where):
    """A writer (here, or in a batch job's encoder process) whose memory runs out fails its job
    with the message a render of its own gives (errors.machine_problem), not 'encoder failed: '
    and the error's empty text, or 'encoder process: MemoryError: ' as a file's error."""

    def allocation_fails(self, frame):
        raise MemoryError()

    if where == "writer":
        monkeypatch.setattr(frames_dir.FramesDirWriter, "write", allocation_fails)
    else:
        monkeypatch.setattr(EncoderProcess, "_outcome", lambda self: "MemoryError: ")
    presets = [build_preset(tiny_data(name=f"job{i}", seed=i), "t.yaml") for i in range(2)]
    options = dict(backend="torch", device="cpu", out_dir=tmp_path / "out", quiet=True)
    results = runner.render_batch(presets, frames_dir=tmp_path / "frames", **options)
    for result in results:
        assert result.error.startswith("out of memory while running (after the memory check passed)")
    assert files_under(tmp_path / "out") == [] and files_under(tmp_path / "frames") == []
    if where == "writer":
        with pytest.raises(RenderError, match="^out of memory while running"):
            runner.render(presets[0], frames_dir=tmp_path / "frames", **options)
