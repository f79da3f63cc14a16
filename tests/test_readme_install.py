"""The README's install lines install the CPU build of torch on any Linux machine (issue 25).

Plain `pip install torch==2.13.0` resolves PyPI's torch, which requires the CUDA libraries
(nvidia-*) and triton: gigabytes a CPU-only machine never uses. The README's lines add PyTorch's
CPU index, where the same version is `2.13.0+cpu` with no CUDA dependency. Checked with the real
pip resolving the lines' torch requirement against two local stand-ins built here: a "PyPI"
whose torch 2.13.0 requires nvidia-cublas-cu12 and triton (as the real one does on Linux), and a
"CPU index" holding torch 2.13.0+cpu. The lines' index options are mapped onto them; pip's own
configuration (its files and PIP_* variables: find-links, the machine's indexes) is left out, so
nothing but the stand-ins is read and nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPI = "https://pypi.org/simple"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SECTIONS = ("## Install and render", "## Install and test")
INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url")
CUDA = re.compile(r"^(nvidia-.*|triton)$")


def section_block(heading: str) -> str:
    """The first ```bash block under a heading of README.md (the heading's line starts with it)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = next(m.end() for m in re.finditer(r"^## .*$", text, re.M) if m.group().startswith(heading))
    block = re.search(r"```bash\n(.*?)```", text[start:], re.S)
    assert block, f"README.md: no ```bash block under {heading!r}"
    return block.group(1).strip()


def pip_install_args(command: str) -> list[str]:
    """The arguments after `pip install` in a shell line of commands joined by &&."""
    for part in command.split("&&"):
        words = shlex.split(part)
        for i, word in enumerate(words[:-1]):
            if word.endswith("pip") and words[i + 1] == "install":
                return words[i + 2 :]
    raise AssertionError(f"no pip install in {command!r}")


def split_args(args: list[str]) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(index options as (option, url), requirements, other options) of pip install's
    arguments; an editable (-e PATH: the project itself) is dropped."""
    indexes, requirements, others = [], [], []
    words = iter(args)
    for word in words:
        option, _, inline = word.partition("=")
        if option in INDEX_OPTIONS:
            indexes.append((option, inline or next(words)))
        elif word in ("-e", "--editable"):
            next(words)
        elif word.startswith("-"):
            others.append(word)
        else:
            requirements.append(word)
    return indexes, requirements, others


def wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    """A minimal pure-Python wheel that pip can resolve: its METADATA names its dependencies."""
    path = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    files = {
        f"{info}/METADATA": metadata,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{n},,\n" for n in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
    return path


def simple_index(root: Path, wheels: dict[str, list[tuple[str, list[str]]]]) -> str:
    """A PEP 503 "simple" index in `root` of the given wheels by project; its file:// URL."""
    files = root / "files"
    files.mkdir(parents=True)
    for project, versions in wheels.items():
        page = root / "simple" / project
        page.mkdir(parents=True)
        links = "".join(
            f'<a href="../../files/{wheel(files, project, v, r).name}">{project}</a>\n' for v, r in versions
        )
        (page / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    return (root / "simple").as_uri()


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory) -> dict[str, str]:
    """The real indexes' URLs mapped to their local stand-ins."""
    root = tmp_path_factory.mktemp("indexes")
    pypi = simple_index(
        root / "pypi",
        {
            "torch": [("2.13.0", ["nvidia-cublas-cu12==12.8.4.1", "triton==3.6.0"])],
            "nvidia-cublas-cu12": [("12.8.4.1", [])],
            "triton": [("3.6.0", [])],
        },
    )
    cpu = simple_index(root / "cpu", {"torch": [("2.13.0+cpu", [])]})
    return {PYPI: pypi, PYPI + "/": pypi, CPU_INDEX: cpu, CPU_INDEX + "/": cpu}


def resolve(args: list[str], stand_ins: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """What real pip would install for pip install's `args` (the project's editable left out),
    the lines' indexes mapped to the stand-ins (PyPI, the default index, as well): {name: version}."""
    indexes, requirements, others = split_args(args)
    unknown = [url for _, url in indexes if url not in stand_ins]
    assert not unknown, f"an index the test has no stand-in for: {unknown}"
    if not any(option in ("--index-url", "-i") for option, _ in indexes):
        indexes.insert(0, ("--index-url", PYPI))
    mapped = [part for option, url in indexes for part in (option, stand_ins[url])]
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed"]
    command += ["--no-cache-dir", "--quiet", "--report", str(report), *others, *mapped, *requirements]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no pip.conf: not the machine's find-links or indexes
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    installs = json.loads(report.read_text())["install"]
    return {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in installs}


@pytest.mark.parametrize("heading", SECTIONS)
def test_the_readme_install_line_resolves_cpu_torch_and_no_cuda(heading, stand_ins, tmp_path):
    args = pip_install_args(section_block(heading))
    assert any(r.startswith("torch") for r in split_args(args)[1]), "the line installs no torch"
    resolved = resolve(args, stand_ins, tmp_path)
    assert resolved.get("torch") == "2.13.0+cpu", resolved
    assert not [name for name in resolved if CUDA.match(name)], resolved


def test_plain_pypi_torch_would_pull_cuda(stand_ins, tmp_path):
    """The check can fail: the README's old line (PyPI alone) resolves the CUDA packages."""
    resolved = resolve(["torch==2.13.0", "-e", "."], stand_ins, tmp_path)
    assert resolved["torch"] == "2.13.0"
    assert sorted(name for name in resolved if CUDA.match(name)) == ["nvidia-cublas-cu12", "triton"]


def test_ci_installs_with_the_readme_test_line():
    """.ci/run's install is the README's "Install and test" line (up to the tests)."""
    line = section_block("## Install and test").split(" && TRITON_INTERPRET=1")[0]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert line in ci, f".ci/run does not install with the README's line: {line}"
