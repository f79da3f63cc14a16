"""An explore's state file (render/explore/state.py) read as untrusted input: a truncated,
garbled or damaged one is one message naming it (exit 2), before anything is rendered, never a
traceback from the archive."""

from __future__ import annotations

import json

import pytest

from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from physarum.render.explore import plan
from physarum.render.explore.state import ExploreState
from physarum.render.out.metrics import METRIC_COLUMNS
from physarum.render.preset import load_preset
from support import tiny_data, write_preset

ARGUMENTS = {"rounds": 1, "population": 2, "size": 16, "steps": 6, "seed": 1}
TEXT = "name: x\n"
GOOD = {
    "id": "r0-0",
    "round": 0,
    "index": 0,
    "parent": None,
    "values": {"decay": 0.1},
    "name": "x-r0-0",
    "png": "candidates/x-r0-0/x-r0-0-s1.png",
    "error": None,
    "metrics": [[0.5] * len(METRIC_COLUMNS)],
    "graph": {"graph_loops": 1.0},
}


def _state(path, candidates, arguments=None):
    arguments = {**(arguments or ARGUMENTS)}
    state = ExploreState(path, arguments, TEXT)
    path.write_text(json.dumps({"version": 1, "arguments": state.arguments, "candidates": candidates}))


DAMAGED = [
    ("no round", {k: v for k, v in GOOD.items() if k != "round"}, "round and index"),
    ("round as text", {**GOOD, "round": "0"}, "round and index"),
    ("an id not its key", {**GOOD, "id": "r9-9"}, "its id"),
    ("values not numbers", {**GOOD, "values": {"decay": "slow"}}, "values"),
    ("values a list", {**GOOD, "values": [1]}, "values"),
    ("an absolute PNG", {**GOOD, "png": "/etc/passwd"}, "PNG"),
    ("a PNG leading out", {**GOOD, "png": "../../x.png"}, "PNG"),
    ("ragged metrics", {**GOOD, "metrics": [[0.5], [0.5, 0.5]]}, "metrics"),
    ("metrics of text", {**GOOD, "metrics": [["a"] * len(METRIC_COLUMNS)]}, "metrics"),
    ("a graph of text", {**GOOD, "graph": {"graph_loops": "x"}}, "graph"),
    ("a name of a number", {**GOOD, "name": 3}, "name"),
]


@pytest.mark.parametrize("case, record, why", DAMAGED, ids=[case for case, _, _ in DAMAGED])
def test_a_damaged_record_is_one_message_naming_the_file(tmp_path, case, record, why):
    path = tmp_path / "state.json"
    _state(path, {"r0-0": record})
    with pytest.raises(RenderError, match=why) as error:
        ExploreState.open(path, ARGUMENTS, TEXT)
    assert str(path) in str(error.value) and "remove the file" in str(error.value)


def test_a_good_record_is_read(tmp_path):
    path = tmp_path / "state.json"
    _state(path, {"r0-0": GOOD})
    assert ExploreState.open(path, ARGUMENTS, TEXT).candidates == {"r0-0": GOOD}


@pytest.mark.parametrize("text", ['{"version": 1, "argu', b"\xff\xfe{}", "[]", '{"version": 1}'])
def test_a_truncated_or_garbled_file_is_one_message(tmp_path, text):
    path = tmp_path / "state.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(RenderError, match="state.json"):
        ExploreState.open(path, ARGUMENTS, TEXT)


def test_explore_over_a_damaged_state_exits_2_and_renders_nothing(tmp_path, capsys):
    data = tiny_data(run={"steps": 6, "steps_per_frame": 3}, output={"formats": ["png"]})
    path = write_preset(tmp_path, data)
    flags = ["--rounds", "1", "--population", "2", "--size", "16", "--steps", "6", "--seed", "1"]
    options = plan.ExploreOptions(rounds=1, population=2, size=16, steps=6, seed=1)
    explored = plan.explored_preset(load_preset(path), options)
    folder = tmp_path / "out" / "tiny-explore"
    folder.mkdir(parents=True)
    state = ExploreState(folder / "state.json", options.arguments(), explored.to_yaml())
    damaged = {k: v for k, v in GOOD.items() if k != "round"} | {"id": "old"}
    (folder / "state.json").write_text(
        json.dumps({"version": 1, "arguments": state.arguments, "candidates": {"old": damaged}})
    )
    before = (folder / "state.json").read_bytes()
    argv = ["explore", str(path), *flags, "--backend", "torch", "--device", "cpu", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "candidate 'old' is damaged" in err and "Traceback" not in err
    assert (folder / "state.json").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["state.json", *[p.name for p in folder.glob(".*")]]
    )
