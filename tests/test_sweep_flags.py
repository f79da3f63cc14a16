"""`physarum sweep --files driver|workers --max-attempts N --per-node N` and physarum.sweep's
files, max_attempts and per_node: passed through the command layer to SweepOptions, None for
their defaults, a bad value one message (exit 2 on the command line, the same RenderError from
the API), and any of them without --ray refused the same way (a sweep on this host has no use
for them)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import physarum
from physarum.render import sweep as sweeps
from physarum.render.cli.main import main
from support import read_manifest, write_sweep


@pytest.fixture
def options_seen(monkeypatch):
    """The SweepOptions each run_sweep is given (the run itself left out)."""
    seen = []

    def run_sweep(sweep, options, log=None):
        seen.append(options)
        return sweeps.SweepSummary(sweep, options.out_dir, [], gallery=None)

    monkeypatch.setattr(sweeps, "run_sweep", run_sweep)
    return seen


def test_the_flags_reach_the_sweeps_options_and_default_to_none(tmp_path, options_seen, capsys):
    path = str(write_sweep(tmp_path, grid={"model.decay": [0.1]}))
    out = str(tmp_path / "out")
    ray = ["--ray", "auto"]
    assert (
        main(
            [
                "sweep",
                path,
                "--out",
                out,
                *ray,
                "--files",
                "workers",
                "--max-attempts",
                "1",
                "--per-node",
                "2",
            ]
        )
        == 0
    )
    assert main(["sweep", path, "--out", out]) == 0
    physarum.sweep(path, out, ray="auto", files="driver", max_attempts=5, per_node=1)
    given, default, api = options_seen
    assert (given.files, given.max_attempts, given.per_node) == ("workers", 1, 2)
    assert (default.files, default.max_attempts, default.per_node) == (None, None, None)
    assert (api.files, api.max_attempts, api.per_node) == ("driver", 5, 1)
    capsys.readouterr()


@pytest.mark.parametrize(
    ("flags", "option", "message"),
    [
        (["--files", "bogus"], {"files": "bogus"}, "--files must be one of driver, workers, got 'bogus'"),
        (["--max-attempts", "0"], {"max_attempts": 0}, "--max-attempts must be at least 1, got 0"),
        (["--per-node", "0"], {"per_node": 0}, "--per-node must be at least 1, got 0"),
        (["--per-node", "-3"], {"per_node": -3}, "--per-node must be at least 1, got -3"),
        (
            ["--files", "driver"],
            {"files": "driver"},
            "--files needs --ray: only a Ray sweep takes --files, --max-attempts and --per-node; "
            "a sweep without --ray renders on this host (--devices)",
        ),
        (
            ["--max-attempts", "2", "--per-node", "1"],
            {"max_attempts": 2, "per_node": 1},
            "--max-attempts and --per-node need --ray: only a Ray sweep takes --files, "
            "--max-attempts and --per-node; a sweep without --ray renders on this host (--devices)",
        ),
    ],
)
@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_a_bad_value_is_one_message_and_exit_2_here_and_in_the_api(
    tmp_path, capsys, options_seen, flags, option, message, dry_run
):
    path = str(write_sweep(tmp_path, grid={"model.decay": [0.1]}))
    out = str(tmp_path / "out")
    argv = ["sweep", path, "--out", out, *flags, *(["--dry-run"] if dry_run else [])]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"error: {message}"] and captured.out == ""
    with pytest.raises(physarum.RenderError) as error:
        physarum.sweep(path, out, dry_run=dry_run, **option)
    assert str(error.value) == message
    assert options_seen == [] and not (tmp_path / "out").exists()


def test_the_api_refuses_a_wrong_type_and_names_the_options(tmp_path):
    path = str(write_sweep(tmp_path, grid={"model.decay": [0.1]}))
    with pytest.raises(TypeError, match="files must be text"):
        physarum.sweep(path, dry_run=True, files=1)
    with pytest.raises(TypeError, match="max_attempts must be a whole number"):
        physarum.sweep(path, dry_run=True, max_attempts="3")
    with pytest.raises(TypeError, match="per_node must be a whole number"):
        physarum.sweep(path, dry_run=True, per_node=1.5)


def test_the_help_names_the_three_flags():
    done = subprocess.run(
        [sys.executable, "-m", "physarum.render.cli.main", "sweep", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "--files driver|workers" in done.stdout and "--max-attempts N" in done.stdout
    assert "--per-node N" in done.stdout


@pytest.mark.slow  # starts a Ray instance
def test_a_ray_sweep_records_the_max_attempts_it_was_given(tmp_path, capsys):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'physarum[ray]'")
    path = str(write_sweep(tmp_path, grid={"model.decay": [0.1, 0.2]}))
    out = tmp_path / "out"
    argv = ["sweep", path, "--ray", "auto", "--out", str(out), "--quiet", "--no-gallery"]
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        assert main([*argv, "--files", "workers", "--max-attempts", "1"]) == 0
    finally:
        ray.shutdown()
    done = [record for record in read_manifest(out / "s") if record["status"] == "done"]
    assert len(done) == 2
    assert {(record["attempt"], record["max_attempts"]) for record in done} == {(1, 1)}
    capsys.readouterr()
