"""Every `physarum ...` command in the fenced code blocks (```bash, ```sh and plain ```) of
README.md and docs/*.md is classified here, and the quick ones run as written (issue 24, item 6).

A command is either run (RUN: in a temporary folder holding a copy of what it reads, its exit
code checked), skipped for a stated reason (SKIPPED: long renders and sweeps), or a synopsis
(it names a placeholder such as PRESET or FILE, or shows options in [brackets]: SYNOPSIS_WORDS).
A new command in the docs that is none of these fails test_every_doc_command_is_run_or_skipped,
so it must be classified here. No command here is made smaller with --set: those that run are
cheap as written.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)  # every fenced block, in pairs
SHELL = ("bash", "sh", "")  # the blocks whose lines are commands

# the words that mark a synopsis (a command's form, not a command to run)
SYNOPSIS_WORDS = re.compile(r"\b(PRESET|FILE|DIR|SWEEP|CHECKPOINT|OUT|KEY|STEPS|N)\b|\[--")

# command as written (its comment cut) -> (what it needs copied from the repository, exit code)
RUN = {
    "physarum presets embers --copy mine": ((), 0),
    "physarum presets": ((), 0),
    "physarum sweep sweeps/angles.yaml --dry-run": (("sweeps",), 0),
}

# command as written -> why it is not run here
SKIPPED = {
    "physarum render mine/embers.yaml --preview": "renders the copy the line above makes (a preview: ~20 s on 2 cores)",
    "physarum sweep sweeps/angles.yaml --devices all": "a whole sweep on every GPU (minutes)",
    "physarum sweep sweeps/angles.yaml --devices cuda:0,cuda:1": "needs two GPUs",
    "physarum sweep sweeps/angles.yaml --devices cpu": "a whole sweep (minutes on 2 cores)",
    "physarum sweep sweeps/angles.yaml --devices all --out outputs": "a whole sweep on every GPU",
    "physarum sweep sweeps/angles.yaml --ray auto --out s3://my-bucket/sweeps": (
        "needs a Ray cluster and a bucket (tests/test_sweep_cluster_s3.py runs one on loopback)"
    ),
    "physarum live quickstart": "a server that runs until Ctrl-C (tests/test_live_browser.py drives one)",
    "physarum live mine.yaml --set model.decay=0.05 --seed 7": "a server until Ctrl-C; mine.yaml is the reader's",
    "physarum live quickstart --full": "a server until Ctrl-C, at full size",
    "physarum render veins --checkpoint-every 500": "long render: veins, 2000 steps (about a minute on 2 cores)",
    "physarum render veins --checkpoint-at 250,1500": "long render: veins, 2000 steps",
    "physarum render --resume outputs/veins/veins-s7-checkpoint-1500.npz": "resumes the long veins render above",
    "physarum render --resume outputs/veins/veins-s7-checkpoint-1500.npz "
    "--set palette.names=[viridis] --set output.formats=[png]": "resumes the long veins render above",
    "physarum render --resume outputs/veins/veins-s7-checkpoint-1500.npz "
    "--set model.decay=0.12 --out perturbed": "resumes the long veins render above",
    "physarum render --resume outputs/veins/veins-s7-checkpoint-1500.npz --set run.steps=4000": (
        "resumes the long veins render above"
    ),
    "physarum sensitivity quickstart --plane model.deposit=1:10:16 model.decay=0.01:0.3:16": (
        "long: 256 points of the plane (the 8x8 plane took 98.5 s on 2 cores)"
    ),
    "physarum sweep sweeps/angles.yaml": "long: renders the 16 jobs of the sweep",
    "physarum explore quickstart --size 128 --steps 300 --rounds 2 --population 24 --keep 12 --device cpu": (
        "long: 48 candidates (31 s on 2 cores); tests/test_explore_run.py runs a small explore"
    ),
    "physarum render outputs/quickstart-explore/kept/quickstart-r1-014.yaml": "renders a candidate of the explore above",
}


def doc_commands() -> list[tuple[str, str]]:
    """(where: file:line, command) for each `physarum` command line of a fenced bash, sh or plain
    block: a `$ ` prompt cut, lines ending in a backslash joined, a trailing # comment cut."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            if block.group(1) not in SHELL:
                continue
            first_line = text.count("\n", 0, block.start(2)) + 1
            lines = block.group(2).split("\n")
            number = 0
            while number < len(lines):
                start, line = number, lines[number].strip().removeprefix("$ ")
                while line.endswith("\\") and number + 1 < len(lines):
                    number += 1
                    line = line[:-1].rstrip() + " " + lines[number].strip()
                number += 1
                command = line.split(" #")[0].strip()
                if command.startswith("physarum "):
                    found.append((f"{doc.relative_to(ROOT)}:{first_line + start}", command))
    return found


def _classified(command: str) -> bool:
    return command in RUN or command in SKIPPED or bool(SYNOPSIS_WORDS.search(command))


def test_every_doc_command_is_run_or_skipped():
    commands = doc_commands()
    assert len(commands) >= 20  # the extraction finds the docs' commands
    unclassified = [f"{where}: {command}" for where, command in commands if not _classified(command)]
    assert not unclassified, "classify these in tests/test_docs_commands.py (RUN or SKIPPED):\n" + "\n".join(
        unclassified
    )
    written = {command for _, command in commands}
    stale = sorted(set(RUN) - written) + sorted(set(SKIPPED) - written)
    assert not stale, f"no longer in the docs (remove from the lists): {stale}"


def test_synopsis_lines_name_a_placeholder():
    assert SYNOPSIS_WORDS.search("physarum render PRESET --stats")
    assert SYNOPSIS_WORDS.search("physarum presets [--quiet]")
    assert not SYNOPSIS_WORDS.search("physarum render quickstart --set palette.names=[ice] --seed 3")


@pytest.mark.parametrize("command", sorted(RUN))
def test_a_quick_doc_command_runs_as_written(tmp_path, command):
    needs, code = RUN[command]
    for name in needs:
        shutil.copytree(ROOT / name, tmp_path / name)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    argv = [sys.executable, "-m", "physarum.render.cli", *shlex.split(command)[1:]]
    run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == code, f"{command}: exit {run.returncode}\n{run.stderr}"
    assert "Traceback" not in run.stderr and run.stdout.strip(), run.stderr
    if "--dry-run" in command or command == "physarum presets":  # these write nothing
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
