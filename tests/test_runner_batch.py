"""Batched renders (runner.render_batch): each job byte for byte as rendered alone, one failing
encoder failing only its job, every job's input ended before any is waited for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from PIL import Image

from physarum.render import runner
from physarum.render.preset import build_preset
from support import ROOT, block, tiny_data


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_a_batch_renders_each_job_byte_for_byte_as_physarum_render_alone(tmp_path):
    # Compared with `physarum render --from` in fresh processes: the bytes x264 writes in a
    # process that already ran other encoders can differ (render/encoder_process.py), so the
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
    from physarum.render.encoder_process import EncoderProcess

    calls = []
    end_input, commit = EncoderProcess.end_input, EncoderProcess.commit

    def ending(process):
        calls.append(("end", process.path.name))
        end_input(process)

    def committing(process):
        calls.append(("commit", process.path.name))
        commit(process)

    presets = [build_preset(tiny_data(name=f"job{i}", seed=i), "t.yaml") for i in range(3)]
    with (
        mock.patch.object(EncoderProcess, "end_input", ending),
        mock.patch.object(EncoderProcess, "commit", committing),
    ):
        results = runner.render_batch(presets, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    assert all(r.error is None for r in results)
    first_commit = next(i for i, (kind, _) in enumerate(calls) if kind == "commit")
    assert {name for kind, name in calls[:first_commit]} == {"job0-s0", "job1-s1", "job2-s2"}
    assert sorted(name for kind, name in calls if kind == "commit") == ["job0-s0", "job1-s1", "job2-s2"]
