"""physarum_api/ (import physarum): the Python API over the stages, and docs/api.md's examples."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import physarum
from physarum.render.cli.main import main
from physarum.render.look.loops import shown_frames
from support import ROOT

SMALL = {"run.steps": 12, "run.steps_per_frame": 3, "canvas.width": 48, "canvas.height": 32}
SMALL_AGENTS = {**SMALL, "agents.count": 400}


def test_the_package_has_a_version_and_imports_no_torch():
    assert physarum.__version__ == physarum.render.__version__
    code = "import sys, physarum; physarum.load('quickstart'); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr


def test_load_takes_a_name_or_a_path_and_dotted_settings():
    by_name = physarum.load("quickstart", {"run.steps": 100, "output.formats": ["gif"]})
    assert (by_name.run.steps, by_name.output.formats) == (100, ["gif"])
    by_path = physarum.load(ROOT / "presets" / "quickstart.yaml")
    assert by_path.run.steps != 100 and by_path.name == "quickstart"


def test_mistakes_are_the_commands_errors():
    with pytest.raises(physarum.PresetError) as error:
        physarum.load("quickstart", {"model.decay": "slow", "canvas.width": -1})
    assert len(error.value.problems) == 2 and "model.decay" in "".join(error.value.problems)
    with pytest.raises(physarum.PresetError, match="did you mean 'quickstart'"):
        physarum.load("quickstartt")


def test_change_validates_and_leaves_the_preset_as_it_was():
    preset = physarum.load("quickstart")
    darker = physarum.change(preset, {"model.decay": 0.2})
    assert darker.model.decay == 0.2 and preset.model.decay != 0.2
    assert darker.model_copy(update={"model": preset.model}) == preset
    with pytest.raises(physarum.PresetError, match="model.decay"):
        physarum.change(preset, {"model.decay": 7})


def test_render_writes_the_commands_files_and_frames_are_its_pixels(tmp_path, capsys):
    preset = physarum.load("quickstart", SMALL_AGENTS)
    result = physarum.render(preset, out=tmp_path / "api", formats=["png"], backend="torch", device="cpu")
    assert sorted(result.outputs) == ["json", "png"]
    argv = ["render", "quickstart", "--out", str(tmp_path / "cli"), "--backend", "torch", "--quiet"]
    settings = [f"--set={k}={v}" for k, v in {**SMALL_AGENTS, "output.formats": "[png]"}.items()]
    assert main([*argv, *settings]) == 0
    capsys.readouterr()
    cli = tmp_path / "cli" / "quickstart" / "quickstart-s1.png"
    assert result.outputs["png"].read_bytes() == cli.read_bytes()
    frames = list(physarum.frames(preset, backend="torch", device="cpu"))
    assert (
        len(frames) == shown_frames(preset) and frames[0].shape == (32, 48, 3) and frames[0].dtype == np.uint8
    )
    with Image.open(cli) as still:
        assert np.array_equal(frames[-1], np.asarray(still.convert("RGB")))
    assert not np.array_equal(frames[0], frames[-1])
    images = list(physarum.images(preset, backend="torch", device="cpu"))
    assert len(images) == len(frames) and all(i.mode == "RGB" for i in images)
    assert all(np.array_equal(np.asarray(i), f) for i, f in zip(images, frames))


def test_physarum_render_is_the_call_and_the_stage_package():
    import physarum.render.cli.main as cli  # binds the package to physarum.render again

    assert callable(physarum.render) and physarum.render.__name__ == "physarum.render"
    assert cli.main is main


def test_sweep_dry_run_is_the_commands(capsys):
    lines = physarum.sweep("angles", dry_run=True)
    assert main(["sweep", "angles", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == lines


def python_blocks(text: str) -> list[str]:
    """The fenced python blocks of a Markdown page, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


@pytest.mark.slow
def test_the_docs_examples_run(tmp_path, monkeypatch, capsys):
    blocks = python_blocks((ROOT / "docs" / "api.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), {"__name__": "docs_api"})
    printed = capsys.readouterr().out
    assert physarum.__version__ in printed and "quickstart-s1.gif" in printed
    assert (tmp_path / "outputs" / "quickstart" / "quickstart-s1.gif").is_file()
    assert (tmp_path / "first.png").is_file()
