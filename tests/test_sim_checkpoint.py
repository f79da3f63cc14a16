"""Checkpoints: written at their steps, read back exactly, resumed to the uninterrupted render's
frames and state on either backend, and refused with one message when bad or foreign."""

from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from physarum.render.base.inputs import MAX_TEXT_BYTES
from physarum.render.cli.main import main
from physarum.render.out.journal import layout_of
from physarum.render.preset import build_preset
from physarum.render.preset.provenance import embedded_text
from physarum.render.sim import checkpoint as ck
from physarum.render.sim import checkpoint_plan as cp
from physarum.render.sim.checkpoint import CheckpointError, read_checkpoint, save_checkpoint, write_members
from physarum.render.sim.simulation import make_simulation
from support import assert_same_state, save_image, tiny_3d, tiny_data, world_data, write_preset

# steps 1..9 of warmup, then 8 frames of 3 steps: frame f ends at step 2 + 3 (f + 1), the last at 26
DATA = tiny_data(run={"steps": 22, "steps_per_frame": 3, "warmup": 2}, output={"formats": ["gif", "png"]})
STEM = "tiny-s3"


def render(tmp_path: Path, out: str, *flags: str, backend: str = "torch", data: dict = DATA) -> Path:
    """physarum render of `data` (or --resume in flags) into tmp_path/out; the job's folder."""
    source = [] if "--resume" in flags else [str(write_preset(tmp_path, data))]
    command = ["render", *source, *flags, "--out", str(tmp_path / out), "--quiet"]
    frames = ["--frames-dir", str(tmp_path / out / "frames")]
    assert main([*command, *frames, "--backend", backend, "--device", "cpu"]) == 0
    return tmp_path / out / "tiny"


def messages(capsys) -> list[str]:
    """stderr's lines but the status lines a render starts with ('physarum: loading torch...')."""
    return [
        line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("physarum: ")
    ]


def gif_frames(path: Path) -> list[bytes]:
    """Each frame of a GIF as its RGB bytes."""
    with Image.open(path) as image:
        frames = []
        for number in range(image.n_frames):
            image.seek(number)
            frames.append(image.convert("RGB").tobytes())
    return frames


def frame_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.png"))}


def end_checkpoint(folder: Path, step: int = 24) -> bytes:
    return (folder / f"{STEM}-checkpoint-{step}.npz").read_bytes()


@pytest.mark.parametrize("step", [1, 8, 11, 18])  # in the warmup, at a frame's step, mid-frame
def test_a_resumed_render_makes_the_uninterrupted_renders_files_and_state(tmp_path, capsys, step):
    whole = render(tmp_path, "whole", "--checkpoint-at", f"{step},24")
    start = str(whole / f"{STEM}-checkpoint-{step}.npz")
    resumed = render(tmp_path, "resumed", "--resume", start, "--checkpoint-at", "24")
    assert end_checkpoint(resumed) == end_checkpoint(whole)  # the state after step 24, byte for byte
    for suffix in (".png", ".gif"):  # the whole animation: the journal's frames, then the rest
        assert (resumed / f"{STEM}{suffix}").read_bytes() == (whole / f"{STEM}{suffix}").read_bytes()
    made = frame_files(tmp_path / "resumed" / "frames")
    assert len(made) == 8 and made == frame_files(tmp_path / "whole" / "frames")
    assert f"resumed from {STEM}-checkpoint-{step}.npz at step {step}" in capsys.readouterr().err


def test_checkpoints_are_written_every_n_steps_and_read_back_exactly(tmp_path):
    folder = render(tmp_path, "o", "--checkpoint-every", "10")
    assert sorted(p.name for p in folder.glob("*checkpoint*")) == [
        f"{STEM}-checkpoint-{s}.npz" for s in (10, 20)
    ]
    preset = build_preset(DATA, "tiny.yaml")
    simulation = make_simulation(preset, "torch", torch.device("cpu"))
    simulation.advance(20)
    header = read_checkpoint(folder / f"{STEM}-checkpoint-20.npz")
    assert (header.step, header.frames) == (20, (20 - 2) // 3)
    assert header.text.splitlines()[1:] == (ck.embedded_text(preset_with_every(10))).splitlines()[1:]
    assert_same_state(header.state(preset), simulation.state)


def preset_with_every(every: int):
    return build_preset({**DATA, "checkpoint": {"every": every}}, "tiny.yaml")


def test_the_same_state_gives_the_same_checkpoint_bytes(tmp_path):
    preset = build_preset(DATA, "tiny.yaml")
    state = make_simulation(preset, "torch", torch.device("cpu")).state
    for name in ("a.npz", "b.npz"):
        save_checkpoint(tmp_path / name, preset, state, 0)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    with np.load(tmp_path / "a.npz", allow_pickle=False) as loaded:  # plain numpy reads it
        assert np.array_equal(loaded["heading"], state.heading.numpy())


def test_a_branch_changes_what_it_sets_and_keeps_the_state_it_starts_from(tmp_path):
    whole = render(tmp_path, "whole", "--checkpoint-at", "11")
    start = str(whole / f"{STEM}-checkpoint-11.npz")
    resumed = render(tmp_path, "resumed", "--resume", start, "--checkpoint-at", "24")
    branched = render(tmp_path, "branched", "--resume", start, "--set", "model.decay=0.3")
    repainted = render(
        tmp_path, "repainted", "--resume", start, "--set", "palette.names=[viridis]", "--checkpoint-at", "24"
    )
    longer = render(tmp_path, "longer", "--resume", start, "--set", "run.steps=28", "--checkpoint-at", "30")
    png = f"{STEM}.png"
    assert (branched / png).read_bytes() != (resumed / png).read_bytes()
    assert (repainted / png).read_bytes() != (resumed / png).read_bytes()
    # another palette shows the same simulation: the same state at the end
    preset = build_preset(DATA, "tiny.yaml")
    ends = [
        read_checkpoint(path / f"{STEM}-checkpoint-24.npz").state(preset) for path in (resumed, repainted)
    ]
    assert_same_state(ends[1], ends[0])
    assert len(gif_frames(longer / f"{STEM}.gif")) == len(gif_frames(resumed / f"{STEM}.gif")) + 2
    assert read_checkpoint(longer / f"{STEM}-checkpoint-30.npz").step == 30


@pytest.mark.parametrize(
    "setting, key",
    [
        ("canvas.width=64", "canvas.width"),
        ("agents.count=100", "agents.count"),
        ("agents.spawn=disk", "agents.spawn"),
        ("run.steps=9", "nothing is left to render"),
    ],
)
def test_a_branch_refuses_what_would_not_fit_the_state(tmp_path, capsys, setting, key):
    whole = render(tmp_path, "whole", "--checkpoint-at", "11")
    code = main(["render", "--resume", str(whole / f"{STEM}-checkpoint-11.npz"), "--set", setting])
    assert code == 2
    err = messages(capsys)
    assert len(err) == 1 and key in err[0], err


def tampered(tmp_path: Path, **changes) -> Path:
    """A checkpoint of DATA's spawned state with members replaced (None: removed)."""
    preset = build_preset(DATA, "tiny.yaml")
    save_checkpoint(tmp_path / "good.npz", preset, make_simulation(preset, "torch", "cpu").state, 0)
    with np.load(tmp_path / "good.npz", allow_pickle=False) as loaded:
        members = {name: loaded[name] for name in loaded.files}
    members.update(changes)
    path = tmp_path / "bad.npz"
    with open(path, "wb") as file:
        write_members(file, {k: v for k, v in members.items() if v is not None})
    return path


def step_of(value: int) -> dict:
    return {"step": np.array(value, np.int64)}


BAD = {
    "not a zip": lambda tmp: write(tmp / "bad.npz", b"not a zip file"),
    "truncated": lambda tmp: write(tmp / "bad.npz", tampered(tmp, **step_of(4)).read_bytes()[:3000]),
    "foreign npz": lambda tmp: saved(tmp / "bad.npz", weights=np.zeros(3)),
    "another format version": lambda tmp: tampered(tmp, **step_of(4), format_version=np.array(9)),
    "another output version": lambda tmp: tampered(tmp, **step_of(4), output_version=np.array(1)),
    "a missing member": lambda tmp: tampered(tmp, **step_of(4), heading=None),
    "an extra member": lambda tmp: tampered(tmp, **step_of(4), extra=np.zeros(2)),
    "a wrong shape": lambda tmp: tampered(tmp, **step_of(4), trail=np.zeros((1, 8, 8), np.float32)),
    "a wrong dtype": lambda tmp: tampered(tmp, **step_of(4), heading=np.zeros((1, 400), np.int32)),
    "positions off the canvas": lambda tmp: tampered(
        tmp, **step_of(4), position=np.full((1, 2, 400), 1 << 30, np.int32)
    ),
    "a NaN trail": lambda tmp: tampered(tmp, **step_of(4), trail=np.full((1, 32, 48), np.nan, np.float32)),
    "step 0": lambda tmp: tampered(tmp, **step_of(0)),
    "a pickled member": lambda tmp: pickled(tmp),
    "an .npy header cut short (header)": lambda tmp: header_cut(tmp, "step.npy"),
    "an .npy header cut short (state)": lambda tmp: header_cut(tmp, "trail.npy"),
    "an unknown compression method": lambda tmp: entry_patched(tmp, "step.npy", 10, b"\x63\x00"),
    "an encrypted member": lambda tmp: entry_patched(tmp, "trail.npy", 8, b"\x01\x00"),
}


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def saved(path: Path, **members) -> Path:
    np.savez_compressed(path, **members)
    return path


def pickled(tmp_path: Path) -> Path:
    """A checkpoint whose preset member is a pickled object array."""
    good = tampered(tmp_path, **step_of(4))
    path = tmp_path / "pickled.npz"
    with zipfile.ZipFile(path, "w") as archive, zipfile.ZipFile(good) as source:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "preset.npy":
                buffer = io.BytesIO()
                np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
                data = buffer.getvalue()
            archive.writestr(info.filename, data)
    return path


def header_cut(tmp_path: Path, member: str) -> Path:
    """A checkpoint whose `member` declares an .npy header of 5 bytes, "{'des": numpy's parser
    raised SyntaxError or tokenize's TokenError, a traceback until test_fuzz found it."""
    good = tampered(tmp_path, **step_of(4))
    path = tmp_path / "cut.npz"
    with zipfile.ZipFile(path, "w") as archive, zipfile.ZipFile(good) as source:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == member:
                data = data[:8] + (5).to_bytes(2, "little") + data[10:]
            archive.writestr(info.filename, data)
    return path


def entry_patched(tmp_path: Path, member: str, offset: int, data: bytes) -> Path:
    """A checkpoint whose central directory entry of `member` has `data` at `offset` (10: its
    compression method, 8: its flags, bit 0 encrypted): zipfile raised NotImplementedError or
    RuntimeError, a traceback until test_fuzz's flipped bytes found it."""
    raw = bytearray(tampered(tmp_path, **step_of(4)).read_bytes())
    at = raw.index(b"PK\x01\x02")
    while raw[at + 46 : at + 46 + len(member)] != member.encode():
        at = raw.index(b"PK\x01\x02", at + 4)
    raw[at + offset : at + offset + len(data)] = data
    return write(tmp_path / "patched.npz", bytes(raw))


@pytest.mark.parametrize("case", BAD)
def test_a_bad_or_foreign_checkpoint_is_one_message_and_exit_2(tmp_path, capsys, case):
    path = BAD[case](tmp_path)
    out = tmp_path / "out"
    assert main(["render", "--resume", str(path), "--out", str(out), "--device", "cpu"]) == 2
    err = messages(capsys)
    assert len(err) == 1 and err[0].startswith(f"error: {path}"), err
    assert not out.exists()


def test_a_member_larger_than_its_shape_is_refused_before_it_is_read(tmp_path):
    path = tampered(tmp_path, **step_of(4))
    with zipfile.ZipFile(tmp_path / "big.npz", "w") as archive, zipfile.ZipFile(path) as good:
        for info in good.infolist():
            extra = b"\0" * (1 << 20) if info.filename == "trail.npy" else b""
            archive.writestr(info.filename, good.read(info) + extra, zipfile.ZIP_DEFLATED)
    with pytest.raises(CheckpointError, match="more bytes than its shape"):
        read_checkpoint(tmp_path / "big.npz").state(build_preset(DATA, "tiny.yaml"))


def test_a_batch_of_several_writes_no_checkpoint(tmp_path):
    from physarum.render.base.errors import RenderError
    from physarum.render.run.runner import render_batch

    presets = [build_preset({**DATA, "seed": seed, "checkpoint": {"at": [3]}}, "t.yaml") for seed in (1, 2)]
    with pytest.raises(RenderError, match="one preset at a time"):
        render_batch(presets, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)


@pytest.mark.interpreter(cpu=True)
@pytest.mark.parametrize("writer, reader", [("triton", "torch"), ("torch", "triton")])
def test_a_checkpoint_resumes_on_the_other_backend_to_the_same_bytes(tmp_path, writer, reader):
    small = tiny_data(run={"steps": 6, "steps_per_frame": 3}, output={"formats": ["png"]})
    whole = render(tmp_path, "whole", "--checkpoint-at", "2,6", backend=writer, data=small)
    start = str(whole / f"{STEM}-checkpoint-2.npz")
    resumed = render(
        tmp_path, "resumed", "--resume", start, "--checkpoint-at", "6", backend=reader, data=small
    )
    assert (resumed / f"{STEM}-checkpoint-6.npz").read_bytes() == (
        whole / f"{STEM}-checkpoint-6.npz"
    ).read_bytes()
    assert (resumed / f"{STEM}.png").read_bytes() == (whole / f"{STEM}.png").read_bytes()


def test_checkpoints_and_fields_change_no_byte_of_the_outputs(tmp_path):
    plain = render(tmp_path, "plain")
    saving = render(tmp_path, "saving", "--checkpoint-every", "5", "--fields-at", "7")
    for name in (f"{STEM}.png", f"{STEM}.gif"):
        assert (saving / name).read_bytes() == (plain / name).read_bytes()
    assert frame_files(tmp_path / "saving" / "frames") == frame_files(tmp_path / "plain" / "frames")
    assert (saving / f"{STEM}-fields-7.npz").exists() and (saving / f"{STEM}-checkpoint-5.npz").exists()


def test_a_two_species_world_resumes_exactly(tmp_path):
    data = tiny_data(
        run={"steps": 12, "steps_per_frame": 3},
        output={"formats": ["png"]},
        species=[{"colour": "#ff0000"}, {"colour": "#00ff00", "model": {"decay": 0.2}}],
        interaction=[[1.0, -0.5], [-0.5, 1.0]],
        world={"boundary": "reflect"},
    )
    whole = render(tmp_path, "whole", "--checkpoint-at", "5,12", data=data)
    start = str(whole / f"{STEM}-checkpoint-5.npz")
    resumed = render(tmp_path, "resumed", "--resume", start, "--checkpoint-at", "12", data=data)
    assert end_checkpoint(resumed, 12) == end_checkpoint(whole, 12)
    assert (resumed / f"{STEM}.png").read_bytes() == (whole / f"{STEM}.png").read_bytes()
    assert read_checkpoint(start).state(build_preset(data, "t.yaml")).position.shape == (2, 2, 200)


def test_a_world_with_walls_resumes_exactly_and_refuses_agents_in_its_walls(images, monkeypatch, capsys):
    monkeypatch.chdir(images)  # outputs embed image paths relative to the working folder
    data = world_data(output={"formats": ["png"]})
    whole = render(images, "whole", "--checkpoint-at", "4,12", data=data)
    start = whole.parent / "world" / "world-s3-checkpoint-4.npz"
    resumed = render(images, "resumed", "--resume", str(start), "--checkpoint-at", "12", data=data)
    for name in ("world-s3-checkpoint-12.npz", "world-s3.png"):
        assert (resumed.parent / "world" / name).read_bytes() == (whole.parent / "world" / name).read_bytes()
    with np.load(start, allow_pickle=False) as loaded:
        members = {name: loaded[name] for name in loaded.files}
    members["position"][0, :, 0] = 1 << 16  # cell (1, 1): in the left-third wall
    with open(images / "walled.npz", "wb") as file:
        write_members(file, members)
    capsys.readouterr()
    assert main(["render", "--resume", str(images / "walled.npz"), "--out", str(images / "x")]) == 2
    err = messages(capsys)
    assert len(err) == 1 and "inside the preset's walls" in err[0], err


def test_a_world_checkpoint_resumes_with_the_images_it_carries(images, tmp_path, monkeypatch):
    # a checkpoint is a stranger's file like a --from file: its images are the ones it carries,
    # so it resumes in an empty folder, with no local image read (the images are removed)
    monkeypatch.chdir(images)
    data = world_data(output={"formats": ["png"]})
    whole = render(images, "whole", "--checkpoint-at", "4,12", data=data)
    start = tmp_path / "start.npz"
    start.write_bytes((whole.parent / "world" / "world-s3-checkpoint-4.npz").read_bytes())
    for journal in (whole.parent / "world").glob("*-journal-*.bin"):  # a checkpoint travels with it
        shutil.copy(journal, tmp_path)
    for image in images.glob("*.png"):
        if image.is_file():
            image.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    resumed = render(elsewhere, "resumed", "--resume", str(start), "--checkpoint-at", "12", data=data)
    for name in ("world-s3-checkpoint-12.npz", "world-s3.png"):
        assert (resumed.parent / "world" / name).read_bytes() == (whole.parent / "world" / name).read_bytes()


# ---------------------------------------------------------------------------------------------
# Size: stated before a render starts, refused when too many or too large


def random_state(preset, generator: np.random.Generator):
    """A state of `preset`'s shapes and dtypes of random bytes, which deflate cannot shrink (no
    state the kernels would make: the bound holds for any)."""
    from physarum.kernels import api

    groups, agents = preset.species_count, preset.agents_per_species
    shapes = {"position": (groups, 2, agents), "heading": (groups, agents)}
    shapes["trail"] = (groups, preset.canvas.height, preset.canvas.width)
    arrays = {
        name: generator.bytes(int(np.prod(shape)) * np.dtype(ck.STATE_MEMBERS[name]).itemsize)
        for name, shape in shapes.items()
    }
    tensors = {
        name: torch.from_numpy(np.frombuffer(data, ck.STATE_MEMBERS[name]).reshape(shapes[name]).copy())
        for name, data in arrays.items()
    }
    return api.State(**tensors, step=torch.tensor(5, dtype=torch.int64))


@pytest.mark.parametrize("canvas, agents", [((48, 32), 400), ((256, 192), 30_000)])
def test_no_checkpoint_is_larger_than_its_stated_bound(tmp_path, canvas, agents):
    data = {**DATA, "canvas": {"width": canvas[0], "height": canvas[1]}, "agents": {"count": agents}}
    preset = build_preset(data, "tiny.yaml")
    save_checkpoint(tmp_path / "c.npz", preset, random_state(preset, np.random.default_rng(7)), 1)
    size, bound = (tmp_path / "c.npz").stat().st_size, cp.checkpoint_bytes(preset)
    assert size <= bound
    # each piece of the bound holds on its own: deflate's growth of what it cannot shrink, and
    # the headers (.npy and zip) of each member and of the archive
    with zipfile.ZipFile(tmp_path / "c.npz") as archive, np.load(tmp_path / "c.npz") as loaded:
        members = archive.infolist()
        for info in members:
            if info.filename[:-4] in ck.STATE_MEMBERS:
                assert info.compress_size <= cp.deflate_bound(info.file_size), info
        headers = sum(info.file_size - loaded[info.filename[:-4]].nbytes for info in members)
        zipped = sum(info.compress_size for info in members)
    assert size - zipped + headers <= len(members) * cp.MEMBER_OVERHEAD + cp.ARCHIVE_OVERHEAD
    # and close: beyond the random state, only the preset's text (which deflates), the margin
    # of 0.1% and the headers
    text, state = 4 * len(ck.embedded_text(preset)), 10 * agents + 4 * canvas[0] * canvas[1]
    assert bound - size <= text + state // 1000 + 8192, (size, bound)


def test_a_render_states_its_checkpoints_before_it_starts_and_in_its_sidecar(tmp_path, capsys):
    out = tmp_path / "out"
    command = ["render", str(write_preset(tmp_path, DATA)), "--out", str(out), "--device", "cpu"]
    assert main([*command, "--checkpoint-every", "10"]) == 0
    each = cp.checkpoint_bytes(build_preset(DATA, "tiny.yaml"))
    err = capsys.readouterr().err
    assert f"note: 2 checkpoints (steps 10 to 20), each at most {cp.megabytes(each)}" in err
    record = json.loads((out / "tiny" / f"{STEM}.json").read_text())["checkpoints"]
    assert (record["count"], record["first_step"], record["last_step"]) == (2, 10, 20)
    journal = layout_of(build_preset(DATA, "tiny.yaml"), {"preview"}).bound(6)  # frames 0..5 by step 20
    assert (record["max_bytes_each"], record["journal_max_bytes"]) == (each, journal)
    assert record["max_bytes_total"] == 2 * each + journal
    assert all(p.stat().st_size <= each for p in (out / "tiny").glob("*-checkpoint-*.npz"))
    assert main([*command, "--checkpoint-every", "10", "--quiet"]) == 0
    assert "checkpoint" not in capsys.readouterr().err
    assert main([*command]) == 0  # no checkpoints: no record
    assert "checkpoints" not in json.loads((out / "tiny" / f"{STEM}.json").read_text())


def test_a_resumed_render_plans_only_the_checkpoints_after_its_start(tmp_path):
    preset = build_preset({**DATA, "checkpoint": {"every": 5, "at": [3]}}, "tiny.yaml")
    assert cp.checkpoint_plan([preset], tmp_path, start=11).steps == (15, 20)
    assert cp.checkpoint_plan([preset], tmp_path).steps == (3, 5, 10, 15, 20)
    assert cp.checkpoint_plan([preset], tmp_path, start=20) is None


def render_tiny(tmp_path: Path, out: str, *flags: str) -> int:
    """The exit code of physarum render of DATA (PNG only) with `flags` into tmp_path/out."""
    preset = write_preset(tmp_path, {**DATA, "output": {"formats": ["png"]}})
    return main(["render", str(preset), *flags, "--out", str(tmp_path / out), "--device", "cpu"])


def refused(tmp_path: Path, capsys, *flags: str) -> str:
    """The one line of a render of DATA with `flags` that exits 2 having written nothing."""
    assert render_tiny(tmp_path, "out", *flags) == 2
    err = messages(capsys)
    assert len(err) == 1 and err[0].startswith("error: tiny: checkpoint: "), err
    assert not (tmp_path / "out").exists()
    return err[0]


@pytest.mark.slow
def test_more_checkpoints_than_a_render_writes_are_refused_before_it_starts(tmp_path, capsys):
    line = refused(tmp_path, capsys, "--set", "run.steps=1100", "--checkpoint-every", "1")
    assert "schedules 1102 checkpoints" in line and f"at most {cp.MAX_CHECKPOINTS}" in line
    assert render_tiny(tmp_path, "fits", "--set", "run.steps=1100", "--checkpoint-every", "2", "--quiet") == 0
    assert len(list((tmp_path / "fits" / "tiny").glob("*-checkpoint-*.npz"))) == 551


def test_exactly_the_most_checkpoints_are_allowed_and_one_more_is_refused(tmp_path):
    def plan(count: int) -> cp.CheckpointPlan:
        return cp.CheckpointPlan("tiny", tuple(range(1, count + 1)), 1, tmp_path, 1 << 40)

    assert plan(cp.MAX_CHECKPOINTS).problem() is None
    problem = plan(cp.MAX_CHECKPOINTS + 1).problem()
    assert problem is not None and f"schedules {cp.MAX_CHECKPOINTS + 1} checkpoints" in problem


def test_checkpoints_larger_than_the_disks_free_space_are_refused(tmp_path, capsys, monkeypatch):
    each = cp.checkpoint_bytes(build_preset({**DATA, "output": {"formats": ["png"]}}, "tiny.yaml"))
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(cp.shutil, "disk_usage", lambda path: usage._replace(free=2 * each - 1))
    line = refused(tmp_path, capsys, "--checkpoint-every", "10")
    assert "2 checkpoints" in line and "do not fit" in line and cp.megabytes(2 * each - 1) in line
    assert render_tiny(tmp_path, "one", "--checkpoint-at", "10", "--quiet") == 0  # one fits


def test_a_checkpoint_of_a_world_with_a_detailed_image_reads_back(tmp_path):
    """What a render writes it can read back: a trail image of noise carries megabytes of text
    after the preset (beyond a preset text's own bound), and its checkpoint still reads."""
    rng = np.random.default_rng(int(np.random.default_rng().integers(1 << 30)))
    side = int(rng.integers(1100, 1400))
    save_image(tmp_path / "noise.png", rng.integers(0, 256, (side, side)))
    data = tiny_data(canvas={"width": 128, "height": 96}, world={"trail_image": {"path": "noise.png"}})
    preset = build_preset(data, str(tmp_path / "p.yaml"))
    simulation = make_simulation(preset, "torch", "cpu")
    simulation.advance(preset.run.steps_per_frame)  # after the first frame
    save_checkpoint(tmp_path / "c.npz", preset, simulation.state, 1)
    checkpoint = read_checkpoint(tmp_path / "c.npz")
    assert len(checkpoint.text) > MAX_TEXT_BYTES and checkpoint.text == embedded_text(preset)


# ---------------------------------------------------------------------------------------------
# 3D: the state of a volume (positions [G, 3, N], direction indices, trail [G, Z, H, W])

VOLUME = tiny_3d(  # the tiny volume's model, larger and longer
    name="vol",
    seed=5,
    canvas={"width": 32, "height": 28, "depth": 24},
    agents={"count": 20000, "spawn": "random"},
    run={"steps": 120, "steps_per_frame": 3},
    camera={"orbit": {"turns": 1, "elevation": 20}, "width": 64, "height": 48, "samples": 24},
    output={"formats": ["gif", "mp4", "png", "webp"], "fps": 10},
)


@pytest.mark.slow
def test_a_killed_3d_render_resumed_writes_the_uninterrupted_renders_bytes(tmp_path):
    """A 3D render (about 4 s on a 2-core CPU) killed after a checkpoint, resumed from it: the
    same GIF, MP4, PNG and WebP bytes, and the same last checkpoint, as the render not killed."""
    from test_run_resume import checkpoints, killed_after

    common = ["--quiet", "--backend", "torch", "--device", "cpu", "--checkpoint-every", "30"]
    path = write_preset(tmp_path, VOLUME)
    assert main(["render", str(path), "--out", str(tmp_path / "whole"), *common]) == 0
    out, folder = tmp_path / "killed", tmp_path / "killed" / "vol"
    first = killed_after(["render", str(path), "--out", str(out), *common], folder, 0)
    assert first < 120 and not list(folder.glob("*.gif")), "a killed render leaves no output"
    with np.load(checkpoints(folder)[first]) as state:
        assert state["position"].shape == (1, 3, 20000) and state["trail"].shape == (1, 24, 28, 32)
    assert main(["render", "--resume", str(checkpoints(folder)[first]), "--out", str(out), *common]) == 0
    whole = tmp_path / "whole" / "vol"
    for fmt in VOLUME["output"]["formats"]:
        assert (folder / f"vol-s5.{fmt}").read_bytes() == (whole / f"vol-s5.{fmt}").read_bytes(), fmt
    assert checkpoints(folder)[120].read_bytes() == checkpoints(whole)[120].read_bytes()


def _volume_checkpoint(tmp_path: Path) -> tuple[Path, dict]:
    data = {**VOLUME, "agents": {"count": 300}, "run": {"steps": 6, "steps_per_frame": 3}}
    data["output"] = {"formats": ["png"]}
    out = tmp_path / "made"
    command = ["render", str(write_preset(tmp_path, data)), "--out", str(out), "--quiet", "--device", "cpu"]
    assert main([*command, "--checkpoint-at", "3"]) == 0
    path = out / "vol" / "vol-s5-checkpoint-3.npz"
    with np.load(path, allow_pickle=False) as loaded:
        return path, {name: loaded[name] for name in loaded.files}


@pytest.mark.parametrize(
    "member, change, message",
    [
        (
            "position",
            lambda a: a.__setitem__((0, 2, 0), 24 << 16),
            r"agent positions \(z\) outside the 32x28x24",
        ),
        ("heading", lambda a: a.__setitem__((0, 0), 24576), r"headings outside \[0, 24576\)"),
        ("position", lambda a: a[:, :2], r"position has shape \[1, 2, 300\]; .* give \[1, 3, 300\]"),
        ("trail", lambda a: a[:, 0], r"trail has shape \[1, 28, 32\]; .* give \[1, 24, 28, 32\]"),
    ],
    ids=["z", "direction", "2d-position", "2d-trail"],
)
def test_a_bad_3d_checkpoint_is_one_message_and_exit_2(tmp_path, capsys, member, change, message):
    path, members = _volume_checkpoint(tmp_path)
    array = members[member].copy()
    changed = change(array)
    members[member] = array if changed is None else np.ascontiguousarray(changed)
    with open(path, "wb") as file:
        write_members(file, members)
    capsys.readouterr()
    assert main(["render", "--resume", str(path), "--out", str(tmp_path / "again"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and err.count("error:") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "again").exists()


def test_a_3d_checkpoint_branches_to_another_camera_and_look(tmp_path):
    """The camera and the look act on frames only: a branch may change them, and its last frame
    is the frame a whole render with them shows (the same state, seen from elsewhere)."""
    data = {**VOLUME, "agents": {"count": 2000}, "run": {"steps": 12, "steps_per_frame": 3}}
    data["output"] = {"formats": ["png"]}
    common = ["--quiet", "--backend", "torch", "--device", "cpu"]
    path = write_preset(tmp_path, data)
    assert main(["render", str(path), "--out", str(tmp_path / "a"), "--checkpoint-at", "6", *common]) == 0
    changes = ["camera.orbit.elevation=60", "camera.width=40", "look.exposure=2"]
    sets = [part for change in changes for part in ("--set", change)]
    checkpoint = tmp_path / "a" / "vol" / "vol-s5-checkpoint-6.npz"
    out = tmp_path / "branch"
    assert main(["render", "--resume", str(checkpoint), "--out", str(out), *sets, *common]) == 0
    assert main(["render", str(path), "--out", str(tmp_path / "whole"), *sets, *common]) == 0
    with (
        Image.open(out / "vol" / "vol-s5.png") as branch,
        Image.open(tmp_path / "whole" / "vol" / "vol-s5.png") as whole,
    ):
        assert branch.size == (40, 48) and np.array_equal(np.asarray(branch), np.asarray(whole))
    with Image.open(tmp_path / "a" / "vol" / "vol-s5.png") as first:
        assert first.size == (64, 48)
