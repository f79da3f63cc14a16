"""The house's import rules, checked: data flows one way through render/'s stage packages.

Stages, in the order data flows through them:

    base < formats < preset < world < sim < look < out < run < tools < sweep, analysis, graph < explore
    < commands < live < cli

A module may import its own stage and earlier ones, never a later one; sweep, analysis and graph
are peers. formats/ (each output format's name, limits, spec and writer) stands on base/ alone,
so that a preset's schema can read the formats from it. A package of render/ that is in no stage is a breach too
(place it in STAGES). kernels/ comes before them all and imports nothing of render/. An import of a
physarum module inside a function or class (not at a module's top level) is refused unless its
line carries a `# start-up:` comment saying it is there for start-up cost (a heavy library
imported only when its command is asked for), never to dodge a cycle. Imports under
`if TYPE_CHECKING:` are checked for direction like any other.

Usage: python scripts/check_imports.py [ROOT]  (ROOT: the repository, by default this script's
parent's parent). Prints one line per breach, FILE:LINE and why, and exits 1 if there is any.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# the rank of each stage: a module may import ranks up to its own
STAGES = {
    "kernels": 0,
    "base": 1,
    "formats": 2,  # what a render can write: each format's name, limits, spec and writer
    "preset": 3,
    "world": 4,
    "sim": 5,
    "look": 6,
    "out": 7,
    "run": 8,
    "tools": 9,
    "sweep": 10,
    "analysis": 10,
    "graph": 10,
    "explore": 11,  # after sweep: it reuses its gallery, contact sheet and batch sizes
    "commands": 12,  # under both faces: the one place a render and a sweep are checked and run
    "live": 13,  # the live studio: a render's loop, its record and its web server
    "cli": 14,
}
# physarum.render itself (its __init__: the version) stands under every stage
ROOT_RANK = 1
START_UP = "# start-up:"


def stage_of(module: str) -> str | None:
    """The stage of a dotted physarum module name, or None if it is not in one."""
    parts = module.split(".")
    if parts[0] != "physarum" or len(parts) < 2:
        return None
    if parts[1] == "kernels":
        return "kernels"
    if parts[1] == "render":
        return parts[2] if len(parts) > 2 and parts[2] != "__init__" else "render"
    return None


def rank(stage: str) -> int:
    return ROOT_RANK if stage == "render" else STAGES.get(stage, ROOT_RANK)


def unplaced(root: Path) -> list[str]:
    """The packages of render/ in no stage, as breaches."""
    return [
        f"render/{folder.name}/: a package in no stage of scripts/check_imports.py (place it in STAGES)"
        for folder in sorted((root / "render").iterdir())
        if (folder / "__init__.py").is_file() and folder.name not in STAGES
    ]


def module_name(path: Path, root: Path) -> str:
    relative = path.relative_to(root).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["physarum", *parts])


def imported(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The physarum modules an import statement reaches (a `from physarum.render import graph`
    reaches physarum.render.graph); `package` is the one a relative import starts from."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "physarum"]
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, base]) if base else ".".join(parts)
    if base.split(".")[0] != "physarum":
        return []
    if base in ("physarum", "physarum.render"):
        return [f"{base}.{alias.name}" for alias in node.names]
    return [base]


def breaches(path: Path, root: Path) -> list[str]:
    """Every breach of the rules in one file, as 'FILE:LINE: why'."""
    here = module_name(path, root)
    own = stage_of(here)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text, filename=str(path))
    found = []
    name = path.relative_to(root)

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in imported(child, package):
                    other = stage_of(target)
                    if other is None:
                        continue
                    if own is not None and rank(other) > rank(own):
                        found.append(
                            f"{name}:{child.lineno}: {own}/ imports {target} of the later stage {other}/"
                        )
                    if nested and START_UP not in lines[child.lineno - 1]:
                        found.append(
                            f"{name}:{child.lineno}: function-level import of {target}"
                            f" (top level, or a '{START_UP}' comment if it is for start-up cost)"
                        )
            inner = nested or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
            )
            visit(child, inner)

    visit(tree, False)
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    found = unplaced(root)
    for folder in ("kernels", "render"):
        for path in sorted((root / folder).rglob("*.py")):
            found.extend(breaches(path, root))
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} breach(es) of the house's import rules (scripts/check_imports.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
