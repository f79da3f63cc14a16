"""The command layer (render/commands/) under both faces: the API refuses what the command
refuses, with the command's message, and writes nothing; both faces render the same files."""

from __future__ import annotations

import pytest
from test_preset_provenance import aliased_preset

import physarum
from physarum.render.cli.main import main
from physarum.render.commands import render as rendering
from physarum.render.formats import gif, gif_pool
from physarum.render.out.specs import gif_size
from support import TINY_3D, tiny_data, write_preset, write_sweep


def _preset_file(tmp_path):
    return write_preset(tmp_path, tiny_data(output={"formats": ["png"]}), "p.yaml")


def _sweep_3d(tmp_path):
    base = {k: v for k, v in TINY_3D.items() if k != "name"}
    return write_sweep(tmp_path, "s3", base=base, grid={"model.decay": [0.1, 0.2]})


def _sweep_2d(tmp_path):
    return write_sweep(tmp_path, "s2", grid={"model.decay": [0.1, 0.2]})


# (case, the command's arguments, the API's call): each gets the tmp folder and the output folder
CASES = [
    (
        "unknown backend",
        lambda t, o: ["render", str(_preset_file(t)), "--out", o, "--backend", "nope"],
        lambda t, o: physarum.render(physarum.load(_preset_file(t)), out=o, backend="nope"),
    ),
    (
        "unknown device",
        lambda t, o: ["render", str(_preset_file(t)), "--out", o, "--device", "nope", "--backend", "torch"],
        lambda t, o: physarum.render(physarum.load(_preset_file(t)), out=o, device="nope", backend="torch"),
    ),
    (
        "unknown format",
        lambda t, o: ["render", str(_preset_file(t)), "--out", o, "--set", "output.formats=[bmp]"],
        lambda t, o: physarum.render(physarum.load(_preset_file(t)), out=o, formats=["bmp"]),
    ),
    (
        "a setting out of range",
        lambda t, o: ["render", str(_preset_file(t)), "--out", o, "--set", "model.decay=7"],
        lambda t, o: physarum.load(_preset_file(t), {"model.decay": 7}),
    ),
    (
        "an unknown preset",
        lambda t, o: ["render", "quickstartt", "--out", o],
        lambda t, o: physarum.load("quickstartt"),
    ),
    (
        "a preset whose embedded text --from could not read back",
        lambda t, o: ["render", str(aliased_preset(t, keys=1000, uses=34)), "--out", o, "--backend", "torch"],
        lambda t, o: physarum.render(
            physarum.load(aliased_preset(t, keys=1000, uses=34)), out=o, backend="torch"
        ),
    ),
    (
        "a sweep of 3D presets",
        lambda t, o: ["sweep", str(_sweep_3d(t)), "--out", o, "--devices", "cpu"],
        lambda t, o: physarum.sweep(_sweep_3d(t), out=o, devices="cpu"),
    ),
    (
        "a dry run of a sweep of 3D presets",
        lambda t, o: ["sweep", str(_sweep_3d(t)), "--out", o, "--dry-run"],
        lambda t, o: physarum.sweep(_sweep_3d(t), out=o, dry_run=True),
    ),
    (
        "a sweep's batch of 0",
        lambda t, o: ["sweep", str(_sweep_2d(t)), "--out", o, "--batch", "0", "--devices", "cpu"],
        lambda t, o: physarum.sweep(_sweep_2d(t), out=o, max_batch=0, devices="cpu"),
    ),
    (
        "a dry run's batch of 0",
        lambda t, o: ["sweep", str(_sweep_2d(t)), "--out", o, "--batch", "0", "--dry-run"],
        lambda t, o: physarum.sweep(_sweep_2d(t), out=o, max_batch=0, dry_run=True),
    ),
]


def _without_source(line: str) -> str:
    source, _, rest = line.partition(": ")
    return rest if source.endswith(".yaml") or source == "tiny" else line


@pytest.mark.parametrize("case, command, call", CASES, ids=[case for case, _, _ in CASES])
def test_the_api_refuses_what_the_command_refuses_with_its_message(tmp_path, capsys, case, command, call):
    cli_out, api_out = tmp_path / "cli", tmp_path / "api"
    assert main([*command(tmp_path, str(cli_out)), "--quiet"]) == 2, case
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    with pytest.raises((physarum.PresetError, physarum.RenderError)) as refused:
        call(tmp_path, api_out)
    # the same message, but for the output folder each names and the source a problem names
    # first (the command reads a file, the API changes a Preset: its name)
    api = str(refused.value).replace(str(api_out), "OUT").splitlines()
    cli = [line.removeprefix("error: ") for line in err.replace(str(cli_out), "OUT").splitlines()]
    assert list(map(_without_source, api)) == list(map(_without_source, cli))
    for out in (cli_out, api_out):
        assert not out.exists() or not any(p.is_file() for p in out.rglob("*")), case


def test_both_faces_render_the_same_files_through_one_layer(tmp_path, capsys):
    path = _preset_file(tmp_path)
    argv = ["render", str(path), "--out", str(tmp_path / "cli"), "--quiet", "--backend", "torch"]
    assert main(argv) == 0
    capsys.readouterr()
    result = physarum.render(physarum.load(path), out=tmp_path / "api", backend="torch", device="cpu")
    cli = tmp_path / "cli" / "tiny" / "tiny-s3.png"
    assert result.outputs["png"].read_bytes() == cli.read_bytes()


def test_a_render_call_checks_before_torch(tmp_path):
    """commands.render.check refuses what needs no torch (the embedded text read back)."""
    preset = physarum.load(aliased_preset(tmp_path, keys=1000, uses=34))
    with pytest.raises(physarum.RenderError, match="past what render --from"):
        rendering.check(preset)
    rendering.check(physarum.load(_preset_file(tmp_path)))  # a plain preset passes


class _Counted(gif_pool._Worker):
    started: list[_Counted] = []

    def __init__(self):
        super().__init__()
        _Counted.started.append(self)


def _gif_workers(monkeypatch) -> None:
    """Every GIF compressed in worker processes, as many as the cores allow, each counted."""
    _Counted.started = []
    monkeypatch.setattr(gif_pool, "_Worker", _Counted)
    monkeypatch.setattr(gif_pool, "PARALLEL_PIXELS", 0)
    monkeypatch.setattr(gif_pool, "PIXELS_PER_WORKER", 1)


def test_a_render_starts_its_gif_workers_before_torch_and_its_writer_takes_them(tmp_path, monkeypatch):
    _gif_workers(monkeypatch)
    preset = physarum.load(write_preset(tmp_path, tiny_data(output={"formats": ["gif"]}), "g.yaml"))
    count = gif.processes(preset, gif_size(preset))
    taken = []
    opened = gif.GifWriter.__init__

    def opening(writer, spec):  # the workers at the writer's opening: those started ahead
        taken.append(list(_Counted.started))
        opened(writer, spec)

    monkeypatch.setattr(gif.GifWriter, "__init__", opening)
    physarum.render(preset, out=tmp_path / "out", backend="torch", device="cpu")
    assert (count > 1) == (taken[0] != [])  # started ahead, where a GIF has workers at all
    assert len(_Counted.started) == (count if count > 1 else 0)  # none started twice
    assert gif_pool._ahead == {}


def test_a_render_refused_after_its_gif_workers_started_ends_them(tmp_path, monkeypatch):
    _gif_workers(monkeypatch)
    preset = physarum.load(write_preset(tmp_path, tiny_data(output={"formats": ["gif"]}), "g.yaml"))
    with pytest.raises(physarum.RenderError, match="backend"):
        physarum.render(preset, out=tmp_path / "out", backend="nope")
    assert gif_pool._ahead == {}
    assert all(worker.process.returncode == 0 for worker in _Counted.started)
    assert not (tmp_path / "out").exists() or not any(p.is_file() for p in (tmp_path / "out").rglob("*"))
