"""A sweep writes each job's outputs, its still and its sidecar; a job that asks for checkpoints,
raw fields (output.fields) or a space-time stack (output.volume) is refused before anything is
written, one message naming the job and the sections (exit 2 on the command line, the same
RenderError from the API, dry run or not). They had been dropped without a word."""

from __future__ import annotations

import copy

import pytest

import physarum
from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from support import SWEEP_BASE, write_sweep

SECTIONS = {
    "checkpoint": ({"checkpoint": {"every": 10}}, "checkpoint"),
    "fields": ({"output": {"fields": {"at": [10]}}}, "output.fields"),
    "volume": ({"output": {"volume": {"formats": ["npy"]}}}, "output.volume"),
}


def sweep_asking(tmp_path, section: dict):
    base = copy.deepcopy(SWEEP_BASE)
    for key, value in section.items():
        base[key] = {**base.get(key, {}), **value}
    return write_sweep(tmp_path, base=base, grid={"model.decay": [0.1, 0.2]})


@pytest.mark.parametrize("kind", sorted(SECTIONS))
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_sweep_refuses_the_files_it_does_not_write(tmp_path, capsys, kind, dry_run):
    section, named = SECTIONS[kind]
    path = sweep_asking(tmp_path, section)
    out = tmp_path / "out"
    args = ["sweep", str(path), "--out", str(out), "--backend", "torch"] + (["--dry-run"] if dry_run else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("error: s-0")
        and f": a sweep writes each job's outputs, still and sidecar, not {named}" in err
    )
    assert "Traceback" not in err and not out.exists()
    with pytest.raises(RenderError, match=f"not {named}"):
        physarum.sweep(str(path), out=str(out), dry_run=dry_run)
    assert not out.exists()


def test_a_sweep_without_them_is_not_refused(tmp_path, capsys):
    path = write_sweep(tmp_path, grid={"model.decay": [0.1, 0.2]})
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--dry-run"]) == 0
