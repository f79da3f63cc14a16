"""Mutation check, run before a release: do the tests notice a dozen chosen one-line mistakes?

Each mutation is (a name, a snippet of one source line, its replacement, the tests that should
catch it). The snippet is looked up in every .py file under render/ and kernels/, so a mutation
survives modules being moved; it must occur exactly once in exactly one file (else the check
refuses with a message: the line changed, update the mutation).

Nothing is changed in the working tree (others may be editing it): the tree is copied to a
temporary folder, and the copy's code is what the tests import (a `physarum` namespace folder
of links to the copy's render/, kernels/, presets/ and sweeps/, first on PYTHONPATH, ahead of the
virtual environment's editable install; the check verifies this before it starts). The chosen
tests are first run unmutated (they must pass), then once per mutation with `-x -q`: a failure
is "caught", a pass "survived". Exit status 1 if any survived, 2 if the check could not run.

    .venv/bin/python scripts/mutations.py            # all of them (a few minutes on 2 cores)
    .venv/bin/python scripts/mutations.py --list
    .venv/bin/python scripts/mutations.py --only checkpoint-limit
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("render", "kernels")  # where snippets are looked for
PACKAGES = ("render", "kernels", "presets", "sweeps")  # physarum.<name> -> <name>/
SKIP = {".git", ".venv", "outputs", "__pycache__", ".pytest_cache", ".ruff_cache", "build", ".pyroot"}


@dataclass(frozen=True)
class Mutation:
    name: str
    snippet: str  # unique in render/ and kernels/
    replacement: str
    tests: tuple[str, ...]  # test files (or node ids) that should catch it
    keyword: str = ""  # a pytest -k expression narrowing them, if any


MUTATIONS = (
    Mutation(
        "colour-threshold-inclusive",
        "torch.bucketize(trail, bounds, right=True)",
        "torch.bucketize(trail, bounds, right=False)",
        ("tests/test_look_colour.py",),
    ),
    Mutation(
        "colour-blend-rounding",
        "after.astype(np.int64) * k + weight // 2",
        "after.astype(np.int64) * k",
        ("tests/test_look_colour.py",),
    ),
    Mutation(
        "checkpoint-limit",
        "if count > MAX_CHECKPOINTS:",
        "if count >= MAX_CHECKPOINTS:",
        ("tests/test_sim_checkpoint.py",),
        "most_checkpoints",
    ),
    Mutation(
        "checkpoint-format-version",
        "if found != FORMAT_VERSION:",
        "if found < FORMAT_VERSION:",
        ("tests/test_sim_checkpoint.py",),
        "foreign",
    ),
    Mutation(
        "mp4-pad-edge",
        'mode="edge")',
        'mode="constant")',
        ("tests/test_formats_writers.py",),
        "mp4",
    ),
    Mutation(
        "gif-loop-count",
        'struct.pack("<H", loop)',
        'struct.pack("<H", 0)',
        ("tests/test_formats_writers.py",),
        "gif",
    ),
    Mutation(
        "gif-delay-stride",
        "10 * max(1, round(100 / fps)) * stride",
        "10 * max(1, round(100 / fps))",
        ("tests/test_formats_gif_file.py", "tests/test_formats_gif_budget.py"),
    ),
    Mutation(
        "reference-diffuse-sum",
        "blended += total  #",
        "blended -= total  #",
        ("tests/test_kernels_reference.py",),
    ),
    Mutation(
        "reference-walls-cleared",
        "return blended if self.wall is None else blended.masked_fill_(self.wall, 0.0)",
        "return blended",
        ("tests/test_kernels_reference.py",),
    ),
    Mutation(
        "exact-half-even",
        "(2 * remainder == denominator and quotient & 1)",
        "(2 * remainder == denominator)",
        ("tests/test_kernels_exact.py",),
    ),
    Mutation(
        "course-last-short-frame",
        "return -(-run.steps // run.steps_per_frame)",
        "return run.steps // run.steps_per_frame",
        ("tests/test_sim_course.py",),
    ),
    Mutation(
        "files-earlier-part-pid",
        "for field in reversed(fields[-2:]):",
        "for field in reversed(fields[-1:]):",
        ("tests/test_base_files.py",),
    ),
    Mutation(
        "preset-levels-high-above-low",
        'self.high != "auto" and self.high <= self.low',
        'self.high != "auto" and self.high < self.low',
        ("tests/test_preset_sections.py",),
        "levels",
    ),
)


class CheckError(Exception):
    """The check cannot run as asked (a snippet not found once, the copy's tests failing)."""


def locate(root: Path, snippet: str) -> Path:
    """The one file under root's SOURCES that holds `snippet`, exactly once."""
    found = []
    for source in SOURCES:
        for path in sorted((root / source).rglob("*.py")):
            count = path.read_text(encoding="utf-8").count(snippet)
            found += [path.relative_to(root)] * count
    if len(found) != 1:
        where = ", ".join(str(p) for p in found) or "nowhere"
        raise CheckError(
            f"snippet {snippet!r} must occur once in {' or '.join(SOURCES)}/, found {len(found)}x: "
            f"{where}; update the mutation"
        )
    return found[0]


def copy_tree(into: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the working tree under `into` and the environment that imports it."""
    copy = into / "repo"
    shutil.copytree(ROOT, copy, ignore=lambda folder, names: [n for n in names if n in SKIP], symlinks=True)
    package = into / "pyroot" / "physarum"  # the package as installed: the API's __init__, the stages
    package.mkdir(parents=True)
    (package / "__init__.py").symlink_to(copy / "physarum_api" / "__init__.py")
    for name in PACKAGES:
        (package / name).symlink_to(copy / name, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTHONPATH")}
    env.update(PYTHONPATH=str(into / "pyroot"), PYTHONDONTWRITEBYTECODE="1")
    probe = "import physarum.render, physarum.kernels; print(physarum.__file__, physarum.render.__path__[0], physarum.kernels.__path__[0])"
    seen = subprocess.run(
        [sys.executable, "-c", probe], cwd=copy, env=env, capture_output=True, text=True, check=False
    ).stdout.split()
    if len(seen) != 3 or not all(Path(p).resolve().is_relative_to(copy) for p in seen):
        raise CheckError(
            f"the copy's code is not what gets imported (physarum, .render, .kernels from {seen})"
        )
    return copy, env


def run_tests(copy: Path, env: dict[str, str], tests: tuple[str, ...], keyword: str = "") -> tuple[bool, str]:
    """Whether the tests pass in the copy, and the last lines of pytest's report."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    if keyword:
        command += ["-k", keyword]
    done = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, check=False)
    tail = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode == 0, tail[-1] if tail else ""


def check(mutations: tuple[Mutation, ...]) -> int:
    with tempfile.TemporaryDirectory(prefix="physarum-mutations-") as folder:
        copy, env = copy_tree(Path(folder))
        files = {m.name: locate(copy, m.snippet) for m in mutations}
        print(f"tests unmutated, in a copy of {ROOT} at {copy}", flush=True)
        for mutation in mutations:
            passed, tail = run_tests(copy, env, mutation.tests, mutation.keyword)
            if not passed:
                raise CheckError(f"{mutation.name}: its tests fail unmutated ({tail}); fix them first")
        rows, survived = [], 0
        for mutation in mutations:
            path = copy / files[mutation.name]
            original = path.read_text(encoding="utf-8")
            path.write_text(original.replace(mutation.snippet, mutation.replacement), encoding="utf-8")
            started = time.monotonic()
            try:
                passed, tail = run_tests(copy, env, mutation.tests, mutation.keyword)
            finally:
                path.write_text(original, encoding="utf-8")
            verdict = "SURVIVED" if passed else "caught"
            survived += passed
            rows.append(
                (mutation.name, str(files[mutation.name]), verdict, f"{time.monotonic() - started:.0f} s")
            )
            print(
                f"{mutation.name:30} {str(files[mutation.name]):30} {verdict:8} {rows[-1][3]:>6}  {tail}",
                flush=True,
            )
    print(
        f"\n{len(rows) - survived} of {len(rows)} mutations caught"
        + (f", {survived} survived" if survived else "")
    )
    return 1 if survived else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", metavar="NAME", action="append", help="run this mutation only (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutations and where each applies")
    args = parser.parse_args(argv)
    chosen = MUTATIONS
    if args.only:
        names = {m.name for m in MUTATIONS}
        unknown = [name for name in args.only if name not in names]
        if unknown:
            parser.error(f"no mutation named {', '.join(unknown)}; --list shows them")
        chosen = tuple(m for m in MUTATIONS if m.name in args.only)
    try:
        if args.list:
            for m in chosen:
                print(
                    f"{m.name:30} {str(locate(ROOT, m.snippet)):30} {' '.join(m.tests)}"
                    + (f" -k {m.keyword}" if m.keyword else "")
                )
                print(f"{'':30} {m.snippet!r} -> {m.replacement!r}")
            return 0
        started = time.monotonic()
        status = check(chosen)
        print(f"in {time.monotonic() - started:.0f} s")
        return status
    except CheckError as error:
        print(f"mutations: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
