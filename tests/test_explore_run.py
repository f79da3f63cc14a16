"""`physarum explore` (render/explore/run.py) end to end on the CPU, small: its files, a kept
candidate's preset rendering the same PNG byte for byte, resuming after an interruption to the
same results, and bad input refused (exit 2, nothing written)."""

from __future__ import annotations

import csv

import pytest

from physarum.render.base.locks import NameLock
from physarum.render.cli.main import main
from physarum.render.explore import plan, run
from physarum.render.preset import load_preset
from support import tiny_data, write_preset

DATA = tiny_data(
    name="tiny",
    canvas={"width": 64, "height": 64},
    agents={"count": 1200, "spawn": "random"},
    run={"steps": 24, "steps_per_frame": 3},
    output={"formats": ["png"]},
)
FLAGS = ["--rounds", "2", "--population", "4", "--keep", "3", "--size", "64", "--steps", "24"]
CPU = ["--backend", "torch", "--device", "cpu", "--quiet"]


def explore_args(path, out, *extra) -> list[str]:
    return ["explore", str(path), *FLAGS, *CPU, "--out", str(out), *extra]


def table(folder) -> list[dict]:
    with open(folder / "candidates.csv", newline="") as file:
        return list(csv.DictReader(file))


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    """One whole explore: (preset path, its folder)."""
    root = tmp_path_factory.mktemp("explore")
    path = write_preset(root, DATA)
    assert main(explore_args(path, root / "out")) == 0
    return path, root / "out" / "tiny-explore"


def test_an_explore_writes_every_candidate_and_the_kept_ones(explored):
    _, folder = explored
    rows = table(folder)
    assert [r["id"] for r in rows] == [f"r{r}-{i:03d}" for r in range(2) for i in range(4)]
    assert all(r["round"] == "1" and r["parent"].startswith("r0-") for r in rows[4:])
    kept = sorted((r for r in rows if r["kept"]), key=lambda r: int(r["kept"]))
    assert len(kept) == 3 and all(r["status"] == "valid" for r in kept)
    assert sorted(p.name for p in (folder / "kept").iterdir()) == sorted(f"{r['name']}.yaml" for r in kept)
    assert (folder / "contact.png").stat().st_size > 0
    assert all(r["name"] in (folder / "index.html").read_text() for r in kept)
    assert len({(r["sensor_angle"], r["turn_angle"], r["deposit"], r["decay"]) for r in rows}) > 4


def test_a_kept_preset_renders_the_same_png(explored, tmp_path, monkeypatch):
    _, folder = explored
    monkeypatch.chdir(tmp_path)  # the paths the outputs embed are relative to the working folder
    first = min((r for r in table(folder) if r["kept"]), key=lambda r: int(r["kept"]))
    kept = folder / "kept" / f"{first['name']}.yaml"
    assert main(["render", str(kept), *CPU, "--out", str(tmp_path / "again")]) == 0
    again = tmp_path / "again" / first["name"] / f"{first['name']}-s3.png"
    assert again.read_bytes() == (folder / first["png"]).read_bytes()


def test_an_interrupted_explore_resumes_to_the_same_results(explored, tmp_path, monkeypatch):
    path, whole = explored
    monkeypatch.setattr(run, "MAX_BATCH", 2)
    rendered = run.render_candidates
    calls = []

    def killed_on_the_third_batch(*args, **kwargs):
        calls.append(len(args[0]))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return rendered(*args, **kwargs)

    monkeypatch.setattr(run, "render_candidates", killed_on_the_third_batch)
    assert main(explore_args(path, tmp_path)) == 130
    folder = tmp_path / "tiny-explore"
    assert not (folder / "candidates.csv").exists()
    monkeypatch.setattr(run, "render_candidates", rendered)
    calls.clear()
    result = run.explore(
        load_preset(path),
        plan.ExploreOptions(
            rounds=2,
            population=4,
            keep=3,
            size=64,
            steps=24,
            backend="torch",
            device="cpu",
            out=tmp_path,
            quiet=True,
        ),
    )
    assert result.rendered == 4  # the two batches recorded before the kill are not rendered again
    assert table(folder) == table(whole)


def test_bad_input_is_refused_with_nothing_written(explored, tmp_path, monkeypatch, capsys):
    path, _ = explored
    assert main(["explore", str(path), "--rounds", "0", *CPU, "--out", str(tmp_path / "a")]) == 2
    assert main(["explore", str(path), "--keep", "99", *FLAGS[:4], *CPU, "--out", str(tmp_path / "a")]) == 2
    assert main(["explore", str(path), "--population", "100000", *CPU, "--out", str(tmp_path / "a")]) == 2
    assert main(["explore", str(tmp_path / "missing.yaml"), *CPU, "--out", str(tmp_path / "a")]) == 2
    monkeypatch.setattr(plan, "CONFIRM_S", 0.0)  # every explore counts as long: it needs --yes
    assert main(explore_args(path, tmp_path / "a")) == 2
    assert not (tmp_path / "a").exists()
    errors = capsys.readouterr().err
    assert "--rounds must be a whole number from 1 to 50 (got 0)" in errors
    assert "--keep must be a whole number from 1 to 8 (got 99)" in errors
    assert "--population must be a whole number from 2 to 1,024 (got 100,000)" in errors
    assert "add --yes to start it" in errors
    assert "Traceback" not in errors


def test_a_rerun_with_other_arguments_is_refused(explored, capsys):
    path, folder = explored
    before = (folder / "state.json").read_bytes()
    other = ["explore", str(path), *FLAGS[:-2], "--steps", "21", *CPU, "--out", str(folder.parent)]
    assert main(other) == 2
    assert (
        "holds an explore of other arguments (steps 24 then, 21 now, the explored preset's text)"
        in capsys.readouterr().err
    )
    assert (folder / "state.json").read_bytes() == before


@pytest.mark.gpu
def test_triton_on_the_gpu_explores_the_same_candidates_as_the_cpu(explored, tmp_path):
    path, on_cpu = explored
    gpu = ["--backend", "triton", "--device", "cuda", "--quiet"]
    assert main(["explore", str(path), *FLAGS, *gpu, "--out", str(tmp_path)]) == 0
    on_gpu = tmp_path / "tiny-explore"
    assert table(on_gpu) == table(on_cpu)  # descriptors, novelty, the choice
    for row in table(on_cpu):
        assert (on_gpu / row["png"]).read_bytes() == (on_cpu / row["png"]).read_bytes(), row["id"]


def test_a_second_explore_of_one_folder_is_refused(explored, capsys):
    path, folder = explored
    with NameLock(folder / run.LOCK_NAME):  # as if another explore held it
        assert main(explore_args(path, folder.parent)) == 2
    assert "another explore" in capsys.readouterr().err
    assert main(explore_args(path, folder.parent)) == 0  # released: it resumes (nothing to render)
    assert not (folder / run.LOCK_NAME).exists()
