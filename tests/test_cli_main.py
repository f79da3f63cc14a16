"""The command line: --from round trips, one clear error and exit code 2 for bad input, interruptions,
--stats, sweeps, and outputs that embed paths relative to the working directory."""

from __future__ import annotations

import errno
import importlib
import json
import pathlib
import shutil
import subprocess
import sys

import pytest
import torch
import yaml
from PIL import Image

from physarum.kernels import get_backend
from physarum.render import preset as preset_package
from physarum.render import sweep as sweeps
from physarum.render.cli import show
from physarum.render.cli.main import main
from physarum.render.preset import catalog
from physarum.render.sim.simulation import batch_key
from support import (
    ROOT,
    TWO_SPECIES,
    WORLD,
    fifo,
    render_tiny,
    tiny_data,
    world_data,
    write_preset,
    write_sweep,
)


@pytest.mark.parametrize("fmt", ["gif", "mp4", "png", "json"])
def test_render_from_an_output_reproduces_it(tmp_path, fmt):
    original = render_tiny(tmp_path / "a").outputs
    code = main(
        [
            "render",
            "--from",
            str(original[fmt]),
            "--out",
            str(tmp_path / "b"),
            "--quiet",
            "--backend",
            "torch",
        ]
    )
    assert code == 0
    again = tmp_path / "b" / "tiny"
    for kind in ("gif", "mp4", "png"):
        assert (again / original[kind].name).read_bytes() == original[kind].read_bytes()


def test_from_a_file_without_a_preset_is_a_clear_error(tmp_path, capsys):
    stray = tmp_path / "stray.png"

    Image.new("RGB", (4, 4)).save(stray)
    assert main(["render", "--from", str(stray), "--out", str(tmp_path / "o")]) == 2
    assert "carries no physarum preset" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_interruption_leaves_no_output(tmp_path, monkeypatch, capsys):
    calls = {"n": 0}
    advance = get_backend("torch").advance

    def interrupted(self, steps):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        advance(self, steps)

    monkeypatch.setattr(get_backend("torch"), "advance", interrupted)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_data()))
    assert main(["render", str(path), "--out", str(tmp_path / "o"), "--quiet", "--backend", "torch"]) == 130
    assert [p for p in (tmp_path / "o").rglob("*") if p.is_file()] == []


def test_cli_rejects_a_bad_scale(tmp_path, capsys):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_data()))
    assert main(["render", str(path), "--scale", "0", "--out", str(tmp_path / "o")]) == 2
    assert "output.gif_scale: Input should be greater than 0 (got 0.0)" in capsys.readouterr().err


BAD_FILES = {
    "unknown_key": "name: x\nmodle: {}\n",
    "wrong_type": "name: x\nseed: seven\n",
    "out_of_range": "name: x\nmodel: {sensor_angle: 181}\n",
    "nan": "name: x\nmodel: {decay: .nan}\n",
    "malformed": "name: x\n  bad: [\n",
    "tag": "name: !!python/name:os.system\n",
    "escape": "name: ../../x\n",
    "too_big": "name: huge\ncanvas: {width: 16384, height: 16384}\nagents: {count: 268435456}\n",
    "mp4_too_wide": "name: wide\ncanvas: {width: 9000, height: 16}\nagents: {count: 10}\nmodel: {sensor_distance: 3}\n",
    "not_a_mapping": "- just\n- a list\n",
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_cli_bad_input_exits_2_with_one_message_and_writes_nothing(case, write_yaml, tmp_path, capsys):
    path = write_yaml(BAD_FILES[case])
    out = tmp_path / "out"
    code = main(["render", str(path), "--out", str(out), "--quiet", "--backend", "torch"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.startswith("error: ") and "Traceback" not in captured.err
    assert not out.exists() or not any(out.rglob("*"))


def test_cli_missing_preset(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml: no such preset file" in capsys.readouterr().err


def test_a_closed_pipe_is_not_a_traceback():

    command = f"{sys.executable} -m physarum.render.cli presets | head -1"
    done = subprocess.run(command, shell=True, capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.count("\n") == 1
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_render_from_a_world_output_reproduces_it(images, monkeypatch, capsys):
    """A world output renders again byte for byte from the images it carries, whether it names
    them relative to the folder it was rendered from or by absolute path (rendered from
    elsewhere); no image file is read (docs/safety.md, "What render --from reads")."""
    path = write_preset(images, world_data())
    monkeypatch.chdir(images)
    assert main(["render", str(path), "--out", str(images / "a"), "--quiet", "--backend", "torch"]) == 0
    monkeypatch.chdir(images / "folder.png")  # elsewhere: the output names its images by absolute path
    assert main(["render", str(path), "--out", str(images / "c"), "--quiet", "--backend", "torch"]) == 0
    assert str(images / "wall.png") in (images / "c" / "world" / "world-s3.json").read_text()
    for image in ("wall.png", "gradient.png", "square.png"):
        (images / image).unlink()
    for first, again in (("a", "b"), ("c", "d")):
        original = images / first / "world" / "world-s3.gif"
        command = [
            "render",
            "--from",
            str(original),
            "--out",
            str(images / again),
            "--quiet",
            "--backend",
            "torch",
        ]
        assert main(command) == 0
        for fmt in ("gif", "mp4", "png"):
            name = f"world-s3.{fmt}"
            assert (images / first / "world" / name).read_bytes() == (
                images / again / "world" / name
            ).read_bytes()


def test_stats_use_species_0_and_sensitivity_refuses_worlds(images, capsys):
    path = write_preset(images, world_data())
    assert (
        main(["render", str(path), "--out", str(images / "out"), "--quiet", "--backend", "torch", "--stats"])
        == 0
    )
    assert (images / "out" / "world" / "world-s3.stats.csv").read_text().count("\n") == 13
    capsys.readouterr()
    assert main(["sensitivity", str(path), "--steps", "2", "--out", str(images / "sens")]) == 2
    assert "physarum sensitivity measures plain presets" in capsys.readouterr().err
    assert not (images / "sens").exists()


def test_sweep_of_a_world_base_preset_finds_its_images(images):
    (images / "presets").mkdir()
    base = world_data()
    base["world"] = {**WORLD, "walls": {"path": "../wall.png"}, "trail_image": {"path": "../gradient.png"}}
    base["species"] = [
        TWO_SPECIES[0],
        {**TWO_SPECIES[1], "agents": {"spawn": "image", "image": "../square.png"}},
    ]
    write_preset(images / "presets", base, "base.yaml")
    sweep_file = images / "sweeps" / "s.yaml"
    sweep_file.parent.mkdir()
    sweep_file.write_text(
        yaml.safe_dump(
            {"name": "s", "base": "../presets/base.yaml", "grid": {"world.boundary": ["wrap", "clamp"]}}
        )
    )
    sweep = sweeps.load_sweep(sweep_file)
    assert [job.preset.world.walls.path for job in sweep.jobs] == [str(images / "wall.png")] * 2
    assert len({batch_key(job.preset) for job in sweep.jobs}) == 2  # boundaries: two batches
    assert (
        main(
            [
                "sweep",
                str(sweep_file),
                "--out",
                str(images / "out"),
                "--devices",
                "cpu",
                "--backend",
                "torch",
                "--quiet",
                "--no-gallery",
            ]
        )
        == 0
    )
    assert len(list((images / "out" / "s").rglob("*.gif"))) == 2


def test_outputs_embed_image_paths_relative_to_the_working_directory(images, tmp_path_factory, monkeypatch):
    """Two machines rendering from copies of one folder write the same bytes: image paths under
    the working directory are embedded relative to it (and the images travel inside the outputs)."""

    here = tmp_path_factory.mktemp("machine-a")
    there = tmp_path_factory.mktemp("machine-b")
    for folder in (here, there):
        shutil.copytree(images, folder / "work", ignore=shutil.ignore_patterns("folder.png"))
        write_preset(folder / "work", world_data())
    outputs = []
    for folder in (here, there):
        monkeypatch.chdir(folder / "work")
        assert main(["render", "preset.yaml", "--out", "out", "--quiet", "--backend", "torch"]) == 0
        outputs.append(folder / "work" / "out" / "world")
    text = (outputs[0] / "world-s3.json").read_text()
    assert '"path": "wall.png"' in text and str(here) not in text
    for fmt in ("gif", "mp4", "png"):
        name = f"world-s3.{fmt}"
        assert (outputs[0] / name).read_bytes() == (outputs[1] / name).read_bytes(), fmt
    monkeypatch.chdir(there / "work")  # --from renders the same bytes on the other machine
    assert (
        main(
            [
                "render",
                "--from",
                str(outputs[0] / "world-s3.gif"),
                "--out",
                "again",
                "--quiet",
                "--backend",
                "torch",
            ]
        )
        == 0
    )
    assert (there / "work" / "again" / "world" / "world-s3.gif").read_bytes() == (
        outputs[0] / "world-s3.gif"
    ).read_bytes()


@pytest.mark.parametrize("fmt", ["gif", "json"])
def test_render_from_never_writes_over_its_file(tmp_path, capsys, fmt):
    original = render_tiny(tmp_path).outputs
    before = {f: p.read_bytes() for f, p in original.items()}
    code = main(
        ["render", "--from", str(original[fmt]), "--out", str(tmp_path), "--quiet", "--backend", "torch"]
    )
    assert code == 2
    error = capsys.readouterr().err
    assert f"would write over {original[fmt]} itself" in error and "--out" in error
    assert "Traceback" not in error and error.count("error:") == 1
    assert {f: p.read_bytes() for f, p in original.items()} == before


def test_duplicate_formats_exit_2_and_write_nothing(tmp_path, capsys):
    preset = write_preset(tmp_path, tiny_data(output={"formats": ["gif", "gif", "mp4", "png"]}))
    assert main(["render", str(preset), "--out", str(tmp_path / "o"), "--backend", "torch"]) == 2
    error = capsys.readouterr().err
    assert "output.formats: lists gif more than once" in error and error.count("error:") == 1
    assert not (tmp_path / "o").exists()


def test_a_render_over_earlier_files_says_so(tmp_path, capsys):
    preset = write_preset(tmp_path, tiny_data())
    command = ["render", str(preset), "--out", str(tmp_path / "o"), "--quiet", "--backend", "torch"]
    assert main(command) == 0
    assert "replaced" not in capsys.readouterr().err
    assert main(command) == 0
    folder = tmp_path / "o" / "tiny"
    assert f"note: replaced the earlier files in {folder}: tiny-s3.gif" in capsys.readouterr().err


def _no_files(folder) -> bool:
    return not folder.exists() or [p for p in folder.rglob("*") if p.is_file()] == []


def test_messages_escape_control_characters_of_a_crafted_path(tmp_path, capsys):
    assert main(["render", str(tmp_path / "x\x1b[2J\x07y.yaml")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "x\\x1b[2J\\x07y.yaml" in err


def test_what_a_render_and_validate_print_is_escaped(tmp_path, capsys):
    """The output folder and the preset's path are the user's: a render's notes, file lines and
    timings, and validate's ok line, reach the terminal with their control characters escaped."""
    folder = tmp_path / "p\x1b[2J\u202e"
    folder.mkdir()
    preset = write_preset(folder, tiny_data(canvas={"width": 47, "height": 33}))  # a note: mp4 padded
    out = folder / "o"
    command = ["render", str(preset), "--out", str(out), "--backend", "torch", "--device", "cpu"]
    assert main(command) == 0 and main([*command, "--quiet"]) == 0 and main(["validate", str(preset)]) == 0
    printed = capsys.readouterr()
    lines = (printed.out + printed.err).splitlines()
    assert all(line.isprintable() for line in lines), [line for line in lines if not line.isprintable()]
    assert sum("p\\x1b[2J\\u202e" in line for line in lines) >= 10  # 4 files twice, replaced, ok
    assert any(line.startswith("note: mp4 padded") for line in lines)


@pytest.mark.parametrize("command", ["render", "sweep"])
def test_out_that_is_a_file_is_one_message(tmp_path, capsys, command):
    target = tmp_path / "tiny.yaml"
    if command == "render":
        target.write_text(yaml.safe_dump(tiny_data()))
    else:
        target = write_sweep(tmp_path, seeds=[1])
    out = tmp_path / "out"
    out.write_text("a file, not a folder")
    extra = ["--devices", "cpu"] if command == "sweep" else ["--backend", "torch"]
    assert main([command, str(target), "--out", str(out), "--quiet", *extra]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{out}" in err and "cannot make a folder here" in err
    assert len(err.strip().splitlines()) == 1 and out.read_text() == "a file, not a folder"


def test_a_read_only_output_folder_is_one_message(tmp_path, capsys, monkeypatch):
    path = write_preset(tmp_path, tiny_data())
    out = tmp_path / "out"

    def read_only(self, *args, **kwargs):  # the tests run as root, whom chmod does not stop
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(pathlib.Path, "mkdir", read_only)
    assert main(["render", str(path), "--out", str(out), "--quiet", "--backend", "torch"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {out / 'tiny'}: cannot write: Permission denied\n" and _no_files(out)


def test_a_full_disk_while_writing_the_sidecar_names_the_file(tmp_path, capsys, monkeypatch):
    from physarum.render.base import files

    path = write_preset(tmp_path, tiny_data())
    out = tmp_path / "out"
    open_partial = files.PartialFile.open

    def full(self, *args, **kwargs):
        if self.path.suffix == ".json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return open_partial(self, *args, **kwargs)

    monkeypatch.setattr(files.PartialFile, "open", full)
    assert main(["render", str(path), "--out", str(out), "--quiet", "--backend", "torch"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {out / 'tiny' / 'tiny-s3.json'}: cannot write: No space left on device\n"
    assert not list(out.rglob("*.part"))
    assert not list(out.rglob("tiny-s3.*"))  # all or nothing: no GIF, MP4 or PNG without a sidecar


def test_a_full_disk_while_writing_the_manifest_names_it(tmp_path, capsys, monkeypatch):
    from physarum.render.sweep import manifest

    def full(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(manifest.os, "fsync", full)
    out = tmp_path / "out"
    assert main(["sweep", str(write_sweep(tmp_path, seeds=[1])), "--out", str(out), "--devices", "cpu"]) == 2
    err = capsys.readouterr().err
    assert f"error: {out.resolve() / 's' / 'manifest.jsonl'}: cannot write: No space left on device" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "error",
    [
        lambda: torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
        lambda: RuntimeError(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 GB: out of memory"
        ),
        MemoryError,
    ],
)
def test_memory_that_runs_out_after_the_check_is_one_message(tmp_path, capsys, monkeypatch, error):
    def allocation_fails(self, steps):
        raise error()

    monkeypatch.setattr(get_backend("torch"), "advance", allocation_fails)
    path = write_preset(tmp_path, tiny_data())
    out = tmp_path / "out"
    assert main(["render", str(path), "--out", str(out), "--quiet", "--backend", "torch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: out of memory while running (after the memory check passed)")
    assert len(err.strip().splitlines()) == 1 and _no_files(out)


@pytest.mark.parametrize(
    ("embedded", "says"),
    [
        ("name: [x\n", "malformed YAML at line 2"),
        ("name: !!python/object/apply:os.system [true]\n", "YAML tag not allowed at line 1"),
        ("name: x\nmodel: " + "[" * 500 + "]" * 500 + "\n", "nested more than 64 levels deep"),
        ("name: x\nname: y\n", "key 'name' given twice (lines 1 and 2)"),
        (5, "a preset is YAML text, got int 5"),
        (["name: x"], "a preset is YAML text, got list ['name: x']"),
    ],
)
def test_from_a_file_whose_embedded_preset_is_bad_is_one_message(tmp_path, capsys, embedded, says):
    sidecar = tmp_path / "bad.json"
    sidecar.write_text(json.dumps({"preset_yaml": embedded}))
    assert main(["render", "--from", str(sidecar), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {sidecar} (its embedded preset): ") and says in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_from_a_fifo_or_a_folder_is_one_message(tmp_path, capsys):
    for path, kind in ((fifo(tmp_path / "out.png"), "a FIFO (named pipe)"), (tmp_path, "a folder")):
        assert main(["render", "--from", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 2
        assert capsys.readouterr().err == f"error: {path}: is {kind}, not a regular file\n"
    assert not (tmp_path / "o").exists()


def test_the_command_refuses_a_deep_or_aliased_preset_with_exit_2(tmp_path, capsys):
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: deep\nmodel: " + "{a: " * 500 + "1" + "}" * 500 + "\n")
    assert main(["validate", str(deep)]) == 2
    assert "nested more than 64 levels deep" in capsys.readouterr().err


def test_render_from_a_budgeted_gif_reproduces_its_bytes(tmp_path, capsys):
    path = write_preset(tmp_path, tiny_data(output={"formats": ["gif"], "gif_max_bytes": 6000}))
    first = ["render", str(path), "--out", str(tmp_path / "a"), "--quiet", "--backend", "torch"]
    assert main(first) == 0
    gif = tmp_path / "a" / "tiny" / "tiny-s3.gif"
    report = json.loads(gif.with_suffix(".json").read_text())["gif_budget"]
    assert gif.stat().st_size <= 6000 and report["bytes"] == gif.stat().st_size
    again = ["render", "--from", str(gif), "--out", str(tmp_path / "b"), "--quiet", "--backend", "torch"]
    assert main(again) == 0
    assert (tmp_path / "b" / "tiny" / gif.name).read_bytes() == gif.read_bytes()


def test_an_impossible_gif_budget_is_refused_before_rendering(tmp_path, capsys, monkeypatch):
    from physarum.render.run import runner

    monkeypatch.setattr(runner, "make_batch_simulation", lambda *a: pytest.fail("it simulated"))
    path = write_preset(tmp_path, tiny_data(description="a long one " * 200))  # embedded: > 2000 bytes
    out = tmp_path / "o"
    assert (
        main(["render", str(path), "--gif-max-bytes", "2000", "--out", str(out), "--backend", "torch"]) == 2
    )
    message = capsys.readouterr().err
    assert "output.gif_max_bytes (--gif-max-bytes) is 2000 bytes" in message and "at least" in message
    assert not list(out.rglob("*.*"))


@pytest.mark.parametrize("value", ["tenMB", "12", "0.5KB", "true"])
def test_a_bad_gif_budget_is_one_clear_error(tmp_path, capsys, value):
    path = write_preset(tmp_path, tiny_data())
    assert main(["render", str(path), "--gif-max-bytes", value, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "gif_max_bytes" in err and "Traceback" not in err


def test_preview_writes_a_small_gif_alone(tmp_path, capsys):
    path = write_preset(tmp_path, tiny_data(canvas={"width": 96, "height": 64}))
    assert (
        main(
            ["render", str(path), "--preview", "--out", str(tmp_path / "o"), "--quiet", "--backend", "torch"]
        )
        == 0
    )
    folder = tmp_path / "o" / "previews" / "tiny"
    assert sorted(p.suffix for p in folder.iterdir()) == [".gif", ".json"]
    with Image.open(folder / "tiny-s3.gif") as image:
        assert image.size == (96, 64)  # a canvas under the preview's 256 pixels: not reduced, the GIF whole
    assert json.loads((folder / "tiny-s3.json").read_text())["gif_budget"]["max_bytes"] == 2_000_000


# ---------------------------------------------------------------------------------------------
# Start-up and the light commands (issue 25: items 2 and 6)

LIGHT = [
    ["--help"],
    ["presets"],
    ["presets", "quickstart"],
    ["sweeps"],
    ["validate", "quickstart"],
    ["sweep", "angles", "--dry-run"],
]
# what the light commands never load: torch (seconds), av (its formats registry entry, 0.1 s) and
# numpy (0.15 s); help and the curated presets and sweeps listed or printed build no preset
# schema either (pydantic and the schema: 0.3-0.4 s, most of what was left of their start-up)
HEAVY = ("torch", "av", "numpy", "pydantic")
SCHEMA_FREE = (["--help"], ["presets"], ["presets", "quickstart"], ["sweeps"])


@pytest.mark.parametrize("argv", LIGHT, ids=" ".join)
def test_the_light_commands_import_neither_torch_nor_av(argv, tmp_path):
    code = (
        "import sys\nfrom physarum.render.cli.main import main\n"
        f"try:\n    code = main({argv!r})\nexcept SystemExit as exit:\n    code = exit.code\n"
        f"print(code, [m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    loaded = [] if argv in SCHEMA_FREE else ["pydantic"]  # validate and sweep read presets whole
    assert done.stderr.strip().splitlines()[-1] == f"0 {loaded}", done.stderr


def test_the_listing_says_what_the_validated_curated_presets_say():
    """`physarum presets` reads the curated files as written (catalog.listed), not validated: it
    must agree with the schema on every one, agents.density included (anywhere), and read every
    one plainly (a None would build the schema, which the start-up test above refuses)."""
    for path in catalog.preset_files():
        assert catalog.listed(path) == show._validated(path), path.name
    assert any("density" in catalog.read_shipped(p)["agents"] for p in catalog.preset_files())


def _variant(tmp_path, source: str, name: str, **sections) -> pathlib.Path:
    data = yaml.safe_load((ROOT / "presets" / f"{source}.yaml").read_text())
    return write_preset(tmp_path, {**data, **sections}, f"{name}.yaml")


def test_the_listing_counts_a_density_as_the_schema_and_validates_what_it_cannot_read(tmp_path):
    plain = [
        _variant(tmp_path, "anywhere", "wide", canvas={"width": 640, "height": 360}),  # short_side
        _variant(tmp_path, "cocoon", "volume", agents={"density": 0.07, "spawn": "sphere"}),  # 3D
        _variant(tmp_path, "quickstart", "pixels", agents={"density": 0.3}),
        _variant(
            tmp_path, "quickstart", "half", agents={"density": 65 / 512}, canvas={"width": 16, "height": 16}
        ),
    ]
    for path in plain:
        assert catalog.listed(path) == show._validated(path), path.name
    assert catalog.listed(plain[3]).agents == 32  # 32.5 rounds half to even, as the schema does
    unplain = [
        _variant(tmp_path, "quickstart", "nocount", agents={"spawn": "random"}),  # the default count
        _variant(tmp_path, "quickstart", "text", canvas={"width": "512", "height": 512}),
        _variant(tmp_path, "quickstart", "flag", agents={"count": True}),
        _variant(tmp_path, "quickstart", "inf", agents={"density": float("inf")}),
    ]
    text = (ROOT / "presets" / "quickstart.yaml").read_text()
    written = {  # what the top-level lines alone would misread: refused, never a wrong line
        "bad": "name: [unclosed\n",
        "quoted": text.replace("canvas:", '"canvas":'),
        "alias": text.replace("seed: 1", "seed: &s 1").replace("count: 120000", "count: *s"),
    }
    for name, content in written.items():
        unplain.append(tmp_path / f"{name}.yaml")
        unplain[-1].write_text(content)
    assert [catalog.listed(p) for p in unplain] == [None] * 7
    assert show._validated(unplain[-2]) == catalog.listed(ROOT / "presets" / "quickstart.yaml")
    assert show._validated(unplain[0]).agents == 100_000  # validated instead: the default


def test_the_preset_package_imports_each_name_at_first_use():
    code = (
        "import sys\nimport physarum.render.preset as p\nfrom physarum.render.preset import parse_yaml\n"
        "print('pydantic' in sys.modules, sorted(p.__all__) == sorted(p._HOME_OF))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True"], done.stderr
    for name in preset_package.__all__:
        home = importlib.import_module(preset_package._HOME_OF[name])
        assert getattr(preset_package, name) is getattr(home, name), name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        preset_package.nothing  # noqa: B018


def test_presets_name_prints_the_curated_yaml_and_refuses_others(capsys):
    assert main(["presets", "quickstart"]) == 0
    printed = capsys.readouterr().out
    assert printed == (ROOT / "presets" / "quickstart.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(printed)["name"] == "quickstart"
    assert main(["presets", "quickstartt"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'quickstart'?" in err and "Traceback" not in err
    assert main(["presets", "presets/quickstart.yaml"]) == 2
    assert "not a curated preset" in capsys.readouterr().err


def test_sweeps_lists_each_example_sweep_with_its_description(capsys):
    assert main(["sweeps"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [p.stem for p in sorted((ROOT / "sweeps").glob("*.yaml"))]
    assert [line.split()[0] for line in lines] == names
    angles = yaml.safe_load((ROOT / "sweeps" / "angles.yaml").read_text())["description"]
    assert any(line.startswith("angles ") and line.endswith(angles) for line in lines)


def test_a_render_says_what_it_does_first_and_what_the_budget_chose(tmp_path, capsys):
    path = write_preset(tmp_path, tiny_data(output={"formats": ["gif"], "gif_max_bytes": 6000}))
    assert main(["render", str(path), "--out", str(tmp_path / "o"), "--backend", "torch"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "physarum: loading torch..."
    report = json.loads((tmp_path / "o" / "tiny" / "tiny-s3.json").read_text())["gif_budget"]
    line = next(line for line in err if line.startswith("gif: "))
    d, stride = report["downscale"], report["stride"]
    frames = "every frame" if stride == 1 else f"every {stride}"
    assert f"within the 6 KB budget: {48 // d}x{32 // d}, {frames}" in line
    assert line.startswith(f"gif: {report['bytes'] / 1000:.0f} KB") and f"{report['levels']} levels" in line
    quiet = ["render", str(path), "--out", str(tmp_path / "q"), "--backend", "torch", "--quiet"]
    assert main(quiet) == 0
    err = capsys.readouterr().err
    assert "loading torch" not in err and "gif: " not in err


def test_a_budget_that_leaves_too_little_is_refused_naming_the_least(tmp_path, capsys, monkeypatch):
    from physarum.render.run import runner

    monkeypatch.setattr(runner, "make_batch_simulation", lambda *a: pytest.fail("it simulated"))
    data = tiny_data(canvas={"width": 128, "height": 96}, run={"steps": 40, "steps_per_frame": 2})
    path = write_preset(tmp_path, data)
    out = tmp_path / "o"
    argv = ["render", str(path), "--out", str(out), "--backend", "torch", "--gif-max-bytes"]
    assert main([*argv, "2500"]) == 2
    message = capsys.readouterr().err
    assert "8 frames and 64 pixels" in message and "Traceback" not in message
    least = int(message.split("allow at least ")[1].split()[0])
    assert not list(out.rglob("*.*"))
    monkeypatch.undo()
    assert main([*argv, str(least), "--quiet"]) == 0


def test_a_triton_render_says_it_compiles_before_it_starts(tmp_path, capsys, monkeypatch):
    from physarum.render.base.errors import RenderError
    from physarum.render.run import machine, runner

    def stop(*args, **kwargs):
        raise RenderError("stopped here")

    monkeypatch.setattr(machine, "resolve_backend", lambda requested, device: "triton")
    monkeypatch.setattr(runner, "render", stop)
    path = write_preset(tmp_path, tiny_data())
    assert main(["render", str(path), "--out", str(tmp_path / "o")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == [
        "physarum: loading torch...",
        "physarum: preparing the Triton kernels (compiled on first use, then cached)...",
    ]
    assert lines[2] == "error: stopped here"
    monkeypatch.setattr(machine, "resolve_backend", lambda requested, device: "torch")
    assert main(["render", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "Triton" not in capsys.readouterr().err


def test_a_preview_is_reduced_says_so_and_renders_again_from_its_gif(tmp_path, capsys):
    path = write_preset(tmp_path, tiny_data(canvas={"width": 64, "height": 48}, agents={"count": 800}))
    argv = ["render", str(path), "--preview", "--reduce", "2", "--backend", "torch"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "preview: 64x48 -> 32x24, 800 -> 200 agents, distances kept (a window)" in err
    gif = tmp_path / "a" / "previews" / "tiny" / "tiny-s3.gif"
    assert Image.open(gif).size == (32, 24)
    again = ["render", "--from", str(gif), "--out", str(tmp_path / "b"), "--quiet", "--backend", "torch"]
    assert main(again) == 0
    assert (tmp_path / "b" / "tiny" / "tiny-s3.gif").read_bytes() == gif.read_bytes()


@pytest.mark.parametrize("k", ["0.5", "nan", "5000"])
def test_a_bad_reduce_exits_2_with_one_message_and_writes_nothing(tmp_path, capsys, k):
    path = write_preset(tmp_path, tiny_data())
    assert main(["render", str(path), "--reduce", k, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--reduce: K must be a number from 1 to 1024" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_a_long_render_says_its_estimate_first(tmp_path, capsys, monkeypatch):
    from physarum.render.base.errors import RenderError
    from physarum.render.run import estimate, runner

    def stop(*args, **kwargs):
        raise RenderError("stopped here")

    monkeypatch.setattr(runner, "render", stop)
    path = write_preset(tmp_path, tiny_data())
    argv = ["render", str(path), "--out", str(tmp_path / "o"), "--backend", "torch", "--device", "cpu"]
    assert main(argv) == 2
    assert "estimated" not in capsys.readouterr().err  # 400 agents, 24 steps: seconds
    monkeypatch.setitem(estimate.THROUGHPUT, ("cpu", "torch"), (1e-2, 1e-2))  # a slow machine
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "note: this render is estimated at about 8 minutes on this cpu (torch)" in err
    assert "--preview renders the same picture smaller" in err
    assert main([*argv, "--quiet"]) == 2
    assert "estimated" not in capsys.readouterr().err
    assert main([*argv, "--reduce", "2"]) == 2  # a reduction already: no --preview to point to
    err = capsys.readouterr().err
    assert "note: this render is estimated at about 2 minutes" in err and "--preview" not in err


def test_validate_names_a_volume_and_its_frames(capsys):
    assert main(["validate", "cosmos", "quickstart"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("(cosmos: 625 frames, 512x512x512, frames 1024x1024)"), lines
    assert lines[1].endswith("(quickstart: 80 frames, 512x512)"), lines


def test_the_listing_shows_a_volume_as_three_sides():
    lines = {line.split()[0]: line for line in show.preset_lines()}
    assert lines["cosmos"].split()[1:3] == ["512x512x512", "30720000"], lines["cosmos"]
    assert lines["quickstart"].split()[1] == "512x512"


def test_warmup_says_what_it_compiled_and_refuses_an_unknown_preset(capsys):
    """`physarum warmup`: the torch backend has nothing to cache (said, exit 0, no simulation
    made); an unknown preset is one message and exit 2, before torch."""
    assert main(["warmup", "quickstart", "--device", "cpu", "--backend", "torch"]) == 0
    assert "nothing to compile" in capsys.readouterr().out
    assert main(["warmup", "no-such-preset"]) == 2
    assert "no-such-preset" in capsys.readouterr().err


ENTRY = """
import atexit, pathlib, sys, threading, weakref
from physarum.render.cli.main import run
out = pathlib.Path(sys.argv[1])
class Kept:
    pass
kept = Kept()
weakref.finalize(kept, (out / "finalized").write_text, "x")  # an atexit-time finalizer (tempfile's kind)
atexit.register((out / "atexit").write_text, "x")
class TornDown:  # a module global's __del__ runs only in the interpreter's teardown
    def __del__(self):
        (out / "teardown").write_text("x")
sys.modules["__main__"].torn = TornDown()
if sys.argv[2] == "thread":
    threading.Thread(target=lambda: (__import__("time").sleep(0.5), (out / "thread").write_text("x"))).start()
sys.stdout.write("said before the end")  # buffered: flushed before the process ends
sys.argv = ["physarum", *sys.argv[3:]]
run()
"""


@pytest.mark.parametrize(
    ("command", "code"), [(["presets"], 0), (["render", "quickstart", "--set", "model.decay=7"], 2)]
)
def test_the_command_ends_at_once_with_its_code_after_its_exit_handlers(tmp_path, command, code):
    """run(): the exit code of main, stdout flushed, atexit handlers and finalizers run, and the
    interpreter's teardown skipped (a module global's __del__ never runs: torch's and CUDA's
    teardown is what that saves)."""
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, str(tmp_path), "-", *command], capture_output=True, text=True
    )
    assert done.returncode == code, done.stderr
    assert done.stdout.startswith("said before the end")
    assert (tmp_path / "atexit").exists() and (tmp_path / "finalized").exists()
    assert not (tmp_path / "teardown").exists()


def test_the_command_waits_for_a_thread_still_running(tmp_path):
    """A thread that is not a daemon, still running when main returns: the process ends the
    normal way, after it (its file written)."""
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, str(tmp_path), "thread", "presets"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "thread").exists()
