"""What a branch of a checkpoint may change, and the keys a refusal names."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from physarum.render.cli.main import main
from physarum.render.preset import build_preset
from physarum.render.run.resume import branch_problems, flatten
from physarum.render.sim.checkpoint import Checkpoint, write_members
from support import ROOT, tiny_data, write_preset

STORED = build_preset(tiny_data(), "tiny.yaml")


def branched(*settings: str):
    return build_preset(tiny_data(), "tiny.yaml", list(settings))


def messages(capsys) -> list[str]:
    """stderr's lines but the status lines a render starts with ('physarum: loading torch...')."""
    return [
        line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("physarum: ")
    ]


@pytest.mark.parametrize(
    "setting",
    ["model.decay=0.2", "seed=9", "palette.names=[viridis]", "output.fps=10", "run.steps=40", "name=other"],
)
def test_a_branch_may_change_what_acts_on_the_state(setting):
    assert branch_problems(STORED, branched(setting), step=5) == []


@pytest.mark.parametrize(
    "setting, key", [("canvas.height=40", "canvas.height"), ("agents.radius=0.2", "agents.radius")]
)
def test_a_branch_may_not_change_the_states_shape_or_world(setting, key):
    problems = branch_problems(STORED, branched(setting), step=5)
    assert len(problems) == 1 and problems[0].startswith(f"{key}:")


def test_a_branch_needs_steps_left_after_the_checkpoint():
    problems = branch_problems(STORED, STORED, step=STORED.end_step)
    assert len(problems) == 1 and "run.steps=MORE" in problems[0]


def test_flatten_names_every_leaf_by_its_dotted_key():
    assert flatten({"a": {"b": 1, "c": [2, {"d": 3}]}, "e": {}}) == {
        "a.b": 1,
        "a.c.0": 2,
        "a.c.1.d": 3,
        "e": {},
    }


def test_resume_refuses_stats_in_one_message(tmp_path, capsys):
    from physarum.render.cli.main import main

    assert main(["render", "--resume", str(tmp_path / "any.npz"), "--stats"]) == 2
    err = messages(capsys)
    assert len(err) == 1 and "--stats" in err[0]


# ---------------------------------------------------------------------------------------------
# Killed and resumed: the whole animation, byte for byte

RNG = np.random.default_rng()
FORMATS = ["gif", "mp4", "png", "webp"]


def slow_data(rng: np.random.Generator) -> dict:
    """A preset slow enough on a CPU to be killed midway, its size and seed not fixed in advance."""
    width, height = (int(v) for v in rng.integers(24, 56, 2) * 2)
    return tiny_data(
        name="slow",
        seed=int(rng.integers(1, 1000)),
        canvas={"width": width, "height": height},
        agents={"count": int(rng.integers(30_000, 50_000))},
        run={"steps": 900, "steps_per_frame": 3},
        output={"formats": FORMATS, "gif_scale": 0.5},
    )


def checkpoints(folder: Path) -> dict[int, Path]:
    found = {int(p.stem.rsplit("-", 1)[1]): p for p in folder.glob("*-checkpoint-*.npz")}
    return dict(sorted(found.items()))


def killed_after(command: list[str], folder: Path, after: int) -> int:
    """Run `physarum COMMAND` in a process of its own and SIGKILL it once it has written a
    checkpoint after step `after`; returns that checkpoint's step."""
    process = subprocess.Popen([sys.executable, "-m", "physarum.render.cli", *command], cwd=ROOT)
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None and max(checkpoints(folder), default=0) <= after:
        time.sleep(0.005)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the render ended before it could be killed"
    return max(checkpoints(folder))


@pytest.mark.slow
def test_a_killed_render_resumed_twice_writes_the_uninterrupted_renders_bytes(tmp_path):
    seed = int(RNG.integers(1 << 31))
    data = slow_data(np.random.default_rng(seed))
    common = ["--quiet", "--backend", "torch", "--device", "cpu", "--checkpoint-every", "150"]
    assert main(["render", str(write_preset(tmp_path, data)), "--out", str(tmp_path / "whole"), *common]) == 0
    out, folder = tmp_path / "killed", tmp_path / "killed" / "slow"
    render = ["render", str(write_preset(tmp_path, data)), "--out", str(out), *common]
    first = killed_after(render, folder, 0)
    assert not list(folder.glob("*.gif")), "a killed render leaves no output"
    resume = ["render", "--resume", str(checkpoints(folder)[first]), "--out", str(out), *common]
    second = killed_after(resume, folder, first)  # a resumed render killed again
    assert main(["render", "--resume", str(checkpoints(folder)[second]), "--out", str(out), *common]) == 0
    stem = f"slow-s{data['seed']}"
    for fmt in FORMATS:
        made, whole = folder / f"{stem}.{fmt}", tmp_path / "whole" / "slow" / f"{stem}.{fmt}"
        assert made.read_bytes() == whole.read_bytes(), (
            f"{fmt} differs (seed {seed}, kills at {first}, {second})"
        )
    assert checkpoints(folder)[900].read_bytes() == checkpoints(tmp_path / "whole" / "slow")[900].read_bytes()


# ---------------------------------------------------------------------------------------------
# A checkpoint is a stranger's file: refused before work, and it decides only what it renders

TINY = tiny_data(output={"formats": ["gif", "png"]})


def checkpoint_of(tmp_path: Path, step: int = 5) -> Path:
    out = tmp_path / "made"
    command = ["render", str(write_preset(tmp_path, TINY)), "--out", str(out), "--quiet", "--device", "cpu"]
    assert main([*command, "--checkpoint-at", str(step)]) == 0
    return out / "tiny" / f"tiny-s3-checkpoint-{step}.npz"


def rewritten(path: Path, text=lambda text: text, **members) -> Path:
    """The checkpoint at `path` with its preset text changed by `text` and members replaced."""
    with np.load(path, allow_pickle=False) as loaded:
        found = {name: loaded[name] for name in loaded.files}
    found["preset"] = np.array(text(str(found["preset"])))
    found.update(members)
    with open(path, "wb") as file:
        write_members(file, found)
    return path


def npy_header_only(shape: tuple[int, ...]) -> np.ndarray:
    """Bytes that are an .npy header declaring float32 `shape`, with no data after it."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def test_a_crafted_checkpoint_is_refused_from_its_preset_before_its_state_is_read(
    tmp_path, capsys, monkeypatch
):
    # its preset asks for a canvas no WebP holds and its trail declares a 1 GiB array: the
    # preset's checks refuse it (as render --from of that preset would) before any array is read
    path = rewritten(
        checkpoint_of(tmp_path),
        lambda text: (
            text.replace("width: 48", "width: 16384")
            .replace("height: 32", "height: 16384")
            .replace("  - gif\n", "  - webp\n")
        ),
    )
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    members["trail.npy"] = npy_header_only((1, 16384, 16384))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    monkeypatch.setattr(Checkpoint, "state", lambda *args: pytest.fail("the state was read"))
    capsys.readouterr()
    began = time.perf_counter()
    assert (
        main(["render", "--resume", str(path), "--out", str(tmp_path / "o"), "--quiet", "--device", "cpu"])
        == 2
    )
    assert time.perf_counter() - began < 10
    err = messages(capsys)
    assert len(err) == 1 and err[0].startswith("error:") and "16384" in err[0], err
    assert not (tmp_path / "o").exists()


def test_a_member_declaring_more_than_its_presets_shape_is_refused_before_it_is_read(tmp_path, capsys):
    big = np.zeros((1, 32, 48 * 1000), np.float32)  # 6 MB that deflates to a few KB
    path = rewritten(checkpoint_of(tmp_path), trail=big)
    capsys.readouterr()
    assert (
        main(["render", "--resume", str(path), "--out", str(tmp_path / "o"), "--quiet", "--device", "cpu"])
        == 2
    )
    err = messages(capsys)
    assert len(err) == 1 and f"{path}: trail declares" in err[0], err
    assert not (tmp_path / "o").exists()


def test_a_checkpoints_own_checkpoint_and_fields_sections_are_never_obeyed(tmp_path):
    def sections(text: str) -> str:
        text = text.replace("output:\n", "output:\n  fields:\n    every: 1\n")
        return text + "checkpoint:\n  every: 1\n"

    path = rewritten(checkpoint_of(tmp_path), sections)
    resume = ["render", "--resume", str(path), "--quiet", "--device", "cpu"]
    assert main([*resume, "--out", str(tmp_path / "plain")]) == 0
    made = sorted(p.name for p in (tmp_path / "plain" / "tiny").iterdir())
    assert made == ["tiny-s3.gif", "tiny-s3.json", "tiny-s3.png"]
    assert main([*resume, "--out", str(tmp_path / "own"), "--checkpoint-every", "12"]) == 0
    assert sorted(checkpoints(tmp_path / "own" / "tiny")) == [12, 24]  # the user's flag alone


def resumed_note(capsys, path: Path, out: Path, *flags: str) -> str:
    capsys.readouterr()
    assert main(["render", "--resume", str(path), "--out", str(out), "--device", "cpu", *flags]) == 0
    return next(line for line in capsys.readouterr().err.splitlines() if "from tiny-s3-checkpoint" in line)


def test_a_resume_says_what_its_files_hold_when_the_journal_cannot_give_its_frames(tmp_path, capsys):
    path = checkpoint_of(tmp_path, step=13)  # frames 0..3 (3 steps each) are taken by step 13
    whole = resumed_note(capsys, path, tmp_path / "same")
    assert "frames 1 to 4 of 8 from its frame journal" in whole and "whole animation" in whole
    repainted = resumed_note(capsys, path, tmp_path / "repainted", "--set", "palette.names=[viridis]")
    assert "hold frames 5 to 8 of 8 only" in repainted and "what frames look like" in repainted
    framed = resumed_note(capsys, path, tmp_path / "framed", "--frames-dir", str(tmp_path / "frames"))
    assert "hold frames 5 to 8 of 8 only" in framed and "no RGB frames" in framed
    assert len(list((tmp_path / "frames").glob("*.png"))) == 4
    decayed = resumed_note(capsys, path, tmp_path / "decayed", "--set", "model.decay=0.3")
    assert "frames 5 to 8 the branch's" in decayed


def test_a_branch_by_seed_flag_names_it(tmp_path, capsys):
    note = resumed_note(capsys, checkpoint_of(tmp_path, step=13), tmp_path / "seeded", "--seed", "9")
    assert "branched (--set seed)" in note and "frames 5 to 8 the branch's" in note


def test_a_checkpoints_own_volume_section_is_never_obeyed(tmp_path, capsys):
    """output.volume (a 2D preset's space-time stack) says how a render writes extras: a
    checkpoint's preset never asks for it, the user's --set does."""
    path = rewritten(
        checkpoint_of(tmp_path), lambda text: text.replace("output:\n", "output:\n  volume: {}\n")
    )
    resume = ["render", "--resume", str(path), "--quiet", "--device", "cpu"]
    capsys.readouterr()
    assert main([*resume, "--out", str(tmp_path / "plain")]) == 0
    assert "output.volume are not taken from a shared file" in capsys.readouterr().err
    made = sorted(p.name for p in (tmp_path / "plain" / "tiny").iterdir())
    assert made == ["tiny-s3.gif", "tiny-s3.json", "tiny-s3.png"]
    assert main([*resume, "--out", str(tmp_path / "own"), "--set", "output.volume.formats=[npy]"]) == 0
    assert (tmp_path / "own" / "tiny" / "tiny-s3-spacetime.npy").exists()


# ---------------------------------------------------------------------------------------------
# Looping renders resume to the uninterrupted render's files

LOOPS = {
    "crossfade": {"loop_mode": "crossfade", "loop_frames": 3},
    "ping-pong": {"loop_mode": "ping-pong"},
    "closest": {"loop_mode": "closest", "loop_frames": 2},
}


@pytest.mark.parametrize("mode", sorted(LOOPS))
def test_a_looping_render_resumed_from_any_checkpoint_writes_the_uninterrupted_renders_bytes(tmp_path, mode):
    data = tiny_data(output={"formats": FORMATS, **LOOPS[mode]}, checkpoint={"at": [6, 12, 18, 21]})
    common = ["--quiet", "--backend", "torch", "--device", "cpu"]
    assert main(["render", str(write_preset(tmp_path, data)), "--out", str(tmp_path / "whole"), *common]) == 0
    whole = tmp_path / "whole" / "tiny"
    for step, path in checkpoints(whole).items():  # in the kept frames, the shown ones, the blend
        out = tmp_path / f"from-{step}"
        assert main(["render", "--resume", str(path), "--out", str(out), *common]) == 0
        for fmt in FORMATS:
            made, wanted = out / "tiny" / f"tiny-s3.{fmt}", whole / f"tiny-s3.{fmt}"
            assert made.read_bytes() == wanted.read_bytes(), f"{mode}: {fmt} differs resumed at step {step}"


def test_a_looping_branch_keeps_its_run_and_loop():
    stored = build_preset(tiny_data(output={"loop_mode": "crossfade", "loop_frames": 3}), "tiny.yaml")
    longer = build_preset(
        tiny_data(output={"loop_mode": "crossfade", "loop_frames": 3}), "t.yaml", ["run.steps=30"]
    )
    problems = branch_problems(stored, longer, step=6)
    assert len(problems) == 1 and problems[0].startswith("run.steps:") and "loop_mode=none" in problems[0]
    unlooped = build_preset(tiny_data(output={"loop_mode": "none"}), "t.yaml", ["run.steps=30"])
    assert branch_problems(stored, unlooped, step=6) == []


@pytest.mark.parametrize(
    "mode, members, why",
    [
        ("crossfade", {"loop_taken": np.array(99, np.int64)}, "loop_taken 99"),
        ("crossfade", {"loop_kept": np.zeros((1, 3, 3), np.float32)}, "loop_kept has shape"),
        ("crossfade", {"loop_kept": np.full((2, 32, 48), np.nan, np.float32)}, "loop_kept is not"),
        ("closest", {"loop_window": np.array([7, 99], np.int64)}, "loop_window 7..99"),
        ("ping-pong", {"loop_window": np.array([1, 2], np.int64)}, "loop members or none"),
    ],
)
def test_a_crafted_loop_member_is_one_message(tmp_path, capsys, mode, members, why):
    data = tiny_data(output={"formats": ["gif"], **LOOPS[mode]}, checkpoint={"at": [9]})
    command = ["render", str(write_preset(tmp_path, data)), "--out", str(tmp_path / "o"), "--quiet"]
    assert main([*command, "--device", "cpu"]) == 0
    path = rewritten(checkpoints(tmp_path / "o" / "tiny")[9], **members)
    capsys.readouterr()
    assert main(["render", "--resume", str(path), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = messages(capsys)
    assert len(err) == 1 and why in err[0] and str(path) in err[0], err
    assert not list((tmp_path / "r").rglob("*.gif"))


def test_a_curated_presets_preview_resumes_to_its_files(tmp_path):
    common = ["--preview", "--quiet", "--backend", "torch", "--device", "cpu"]
    out = tmp_path / "whole"
    assert main(["render", "quickstart", "--out", str(out), "--checkpoint-at", "150", *common]) == 0
    whole = out / "previews" / "quickstart"
    (made,) = whole.glob("*-checkpoint-150.npz")
    assert main(["render", "--resume", str(made), "--out", str(tmp_path / "resumed"), *common[1:]]) == 0
    (gif,) = whole.glob("quickstart-s1.gif")  # a preview writes its GIF
    (resumed,) = (tmp_path / "resumed").rglob("quickstart-s1.gif")
    assert resumed.read_bytes() == gif.read_bytes()
