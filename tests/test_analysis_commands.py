"""The sensitivity commands (render/analysis/commands.py) through the command line: the files they
write, what they print, and bad input exiting 2 with nothing written."""

from __future__ import annotations

import csv

import pytest

from physarum.render.cli.main import main
from support import tiny_data


@pytest.mark.slow
def test_cli_sensitivity_writes_csv_plot_and_summary(tmp_path, write_yaml, capsys):
    import json

    import yaml

    path = write_yaml(yaml.safe_dump(tiny_data()))
    code = main(
        [
            "sensitivity",
            str(path),
            "--steps",
            "20",
            "--twins",
            "2",
            "--out",
            str(tmp_path),
            "--quiet",
            "--backend",
            "torch",
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    folder = tmp_path / "tiny"
    with open(folder / "tiny-s3-sensitivity.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 21 * 2 and {r["kind"] for r in rows} == {"agent", "trail"}
    summary = json.loads((folder / "tiny-s3-sensitivity.json").read_text())
    assert summary["summary"]["all"]["twins"] == 2
    assert (folder / "tiny-s3-sensitivity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out.splitlines()
    assert any("exponent" in line for line in printed)
    # the verdict closes the summary and is kept in the document
    assert summary["verdict"] and f"verdict: {summary['verdict']}" in printed


def test_cli_plane_writes_a_heat_map(tmp_path, write_yaml, capsys):
    import yaml

    path = write_yaml(yaml.safe_dump(tiny_data()))
    code = main(
        [
            "sensitivity",
            str(path),
            "--steps",
            "15",
            "--twins",
            "1",
            "--out",
            str(tmp_path),
            "--quiet",
            "--backend",
            "torch",
            "--device",
            "cpu",
            "--plane",
            "model.deposit=1:8:2",
            "model.decay=0.05:0.3:3",
        ]
    )
    assert code == 0
    folder = tmp_path / "tiny"
    with open(folder / "tiny-s3-plane-deposit-decay.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 6 and rows[0]["model.deposit"] == "1" and rows[-1]["model.decay"] == "0.3"
    assert (folder / "tiny-s3-plane-deposit-decay.png").exists()
    printed = capsys.readouterr().out
    assert "2x2 model agrees" in printed and "verdict: " in printed and "deposit x model.decay" in printed


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--plane", "model.decay=0.1:0.3", "model.deposit=1:2:2"], "expected KEY=LO:HI:N"),
        (["--plane", "model.decai=0.1:0.3:2", "model.deposit=1:2:2"], "did you mean 'model.decay'"),
        (["--plane", "canvas.width=64:128:2", "model.deposit=1:2:2"], "not a model parameter"),
        (["--plane", "model.decay=0.1:x:2", "model.deposit=1:2:2"], "must be numbers"),
        (["--plane", "model.decay=0.1:0.3:0", "model.deposit=1:2:2"], "N must be from 1 to 1024"),
        (["--plane", "model.decay=0.1:1.5:3", "model.deposit=1:2:2"], "model.decay"),
        (["--plane", "model.decay=0.1:0.3:2", "model.decay=0.1:0.2:2"], "two different"),
        (["--set", "model.decay={keys: {0: 0.1, 24: 0.2}}"], "model.decay change over the run (schedules)"),
        (["--twins", "0"], "--twins must be from 1 to 64"),
        (["--at", "0"], "--at must be at least 1"),
        (["--steps", "0"], "--steps must be a positive"),
        (["--set", "agents.count=1", "--twins", "2"], "agents.count of at least 2"),
        (["--set", "agents.count=3", "--steps", "2"], "agents.count of at least 4"),
        *[
            (["--plane", "model.decay=0.1:0.3:2", "model.deposit=1:2:2", f"--threshold={value}"], "finite")
            for value in ("nan", "inf", "-inf")
        ],
        *[  # extreme but finite: the heat map's scale could not centre on it (a traceback), or subnormal
            (
                ["--plane", "model.decay=0.1:0.3:2", "model.deposit=1:2:2", f"--threshold={value}"],
                "from -100 to 100",
            )
            for value in ("1e308", "-1e308", "1e-320", "101")
        ],
    ],
)
def test_cli_sensitivity_bad_input_exits_2_and_writes_nothing(
    arguments, message, tmp_path, write_yaml, capsys
):
    import yaml

    path = write_yaml(yaml.safe_dump(tiny_data()))
    out = tmp_path / "out"
    code = main(["sensitivity", str(path), "--out", str(out), "--quiet", "--device", "cpu", *arguments])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_cli_plane_needs_two_axes(tmp_path, write_yaml, capsys):
    import yaml

    path = write_yaml(yaml.safe_dump(tiny_data()))
    with pytest.raises(SystemExit) as exit_info:
        main(["sensitivity", str(path), "--out", str(tmp_path / "out"), "--plane", "model.decay=0.1:0.3:2"])
    assert exit_info.value.code == 2
    assert "--plane: expected 2 arguments" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_cli_sensitivity_on_the_cpu_leaves_cores_to_others(tmp_path, write_yaml, monkeypatch):
    import torch
    import yaml

    from physarum.render.run import machine

    calls = []
    monkeypatch.setattr(machine, "host_cores", lambda: 8)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 8)
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    path = write_yaml(yaml.safe_dump(tiny_data()))
    arguments = ["sensitivity", str(path), "--steps", "3", "--twins", "1", "--out", str(tmp_path)]
    assert main([*arguments, "--quiet", "--backend", "torch", "--device", "cpu"]) == 0
    assert calls and set(calls) == {4}  # half of the cores, as a render takes
