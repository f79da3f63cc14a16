"""`physarum graph` through the command line: the files it writes, the same files twice, and bad
flags exiting 2 with nothing written (render/graph/command.py, figures.py)."""

from __future__ import annotations

import csv

import networkx as nx
import pytest
import yaml

from physarum.render.cli.main import main
from physarum.render.graph.command import chosen_steps
from support import tiny_data

FLAGS = ["--backend", "torch", "--device", "cpu", "--quiet"]


def _run(path, out, *flags) -> int:
    return main(["graph", str(path), "--out", str(out), *FLAGS, *flags])


def test_graph_writes_every_file(tmp_path, write_yaml, capsys):
    path = write_yaml(yaml.safe_dump(tiny_data()))
    assert _run(path, tmp_path, "--at", "8,24", "--min-area", "2") == 0
    folder = tmp_path / "tiny"
    with open(folder / "tiny-s3-graph.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [r["step"] for r in rows] == ["8", "24"]
    assert all(int(r["cycles"]) == int(r["edges"]) - int(r["nodes"]) + int(r["components"]) for r in rows)
    steps = folder / "tiny-s3-graph"
    names = sorted(p.name for p in steps.iterdir())
    assert names == [
        f"step-00000{s}{x}" for s in ("08", "24") for x in ("-edges.csv", "-nodes.csv", ".graphml")
    ]
    assert (folder / "tiny-s3-graph.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    graph = nx.read_graphml(steps / "step-0000024.graphml", node_type=int, force_multigraph=True)
    assert graph.graph["step"] == 24 and graph.number_of_nodes() == int(rows[-1]["nodes"])
    carried = yaml.safe_load(graph.graph["preset_yaml"])  # the preset as run, --set included
    assert carried["name"] == "tiny" and carried["seed"] == 3
    assert str(folder / "tiny-s3-graph.csv") in capsys.readouterr().out


def test_the_same_preset_gives_the_same_files(tmp_path, write_yaml):
    path = write_yaml(yaml.safe_dump(tiny_data()))
    for out in ("a", "b"):
        assert _run(path, tmp_path / out, "--every", "12") == 0
    for name in (
        "tiny-s3-graph.csv",
        "tiny-s3-graph/step-0000024.graphml",
        "tiny-s3-graph/step-0000012-edges.csv",
    ):
        assert (tmp_path / "a/tiny" / name).read_bytes() == (tmp_path / "b/tiny" / name).read_bytes()


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--at", "0,5"], "--at"),
        (["--at", "5,99"], "--at"),
        (["--at", "five"], "--at"),
        (["--every", "0"], "--every"),
        (["--threshold", "2"], "--threshold"),
        (["--threshold", "median"], "--threshold"),
        (["--min-area", "0"], "--min-area"),
        (["--min-area", "1537"], "give from 1 to 1536 cells on this 48x32 canvas"),  # 48 x 32 cells
        (["--min-area", "10000000000"], "give from 1 to 1536"),  # once 22.5 GB: refused at once
        (["--set", "model.decay=7"], "decay"),
    ],
)
def test_bad_flags_exit_2_and_write_nothing(tmp_path, write_yaml, capsys, flags, words):
    path = write_yaml(yaml.safe_dump(tiny_data()))
    assert _run(path, tmp_path / "out", *flags) == 2
    error = capsys.readouterr().err
    assert error.startswith("error:") and words in error and "Traceback" not in error
    assert not (tmp_path / "out").exists()


def test_every_defaults_to_a_tenth_and_ends_on_the_last_step():
    assert chosen_steps(None, None, 100) == tuple(range(10, 101, 10))
    assert chosen_steps(None, 30, 100) == (30, 60, 90, 100)
    assert chosen_steps("50,10,50", None, 100) == (10, 50)
