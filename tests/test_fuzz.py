"""Fuzzing the `physarum` command with untrusted input (docs/safety.md, "The fuzz test").

Random mutations of the curated presets (values, keys, types, YAML text, truncation), random
`--set` values, random bytes and mutated real outputs as `render --from` files, run through
cli.main in this process. Every run must end in exit 0 or 2 with no traceback and only printable
lines; write nothing outside the output folder; leave the output folder as it was when it fails
(an earlier render's files, byte for byte); and open no file outside the test's folder, the
package and Python's own (an audit hook lists every path opened), above all not the private
image planted beside the test's folder, which a crafted `--from` file names in many ways.

Seeded: every case has its own generator, seeded by PHYSARUM_FUZZ_SEED (default 15), the mode
and the case's number; a failure names all three. PHYSARUM_FUZZ_CASES scales the number of
cases (1 by default). Candidates too costly to render on a CPU in milliseconds (their canvas,
agents or steps mutated upwards) are loaded with `physarum validate`, or skipped for `--from`.

`render --resume` is fed a real checkpoint and frame journal (one small render with checkpoints
a session) damaged as an attacker would; each such case must also end within CASE_SECONDS and
grow the process's peak memory by less than MEMORY_MAX, exit 0 only for a checkpoint still
valid (complete outputs, the clean resume's bytes where the damage must not matter) and refuse
the damages MUST_REFUSE lists.
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import random
import shutil
import struct
import sys
import sysconfig
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image, PngImagePlugin

from physarum.render.cli import main as cli
from physarum.render.formats.registry import ALL_FORMATS
from physarum.render.preset import build_preset, load_preset
from support import CURATED, ROOT, save_image

pytestmark = pytest.mark.slow  # hundreds of hostile commands, about 20 s in all

SEED = int(os.environ.get("PHYSARUM_FUZZ_SEED", "15"))
SCALE = float(os.environ.get("PHYSARUM_FUZZ_CASES", "1"))
FLAGS = ["--quiet", "--backend", "torch", "--device", "cpu"]

# ---------------------------------------------------------------------------------------------
# Which files a run opens: an audit hook (it cannot be removed, so it records only when asked)

_OPENED: list | None = None


def _audit(event: str, args) -> None:
    if event == "open" and _OPENED is not None and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


def _allowed_roots(sandbox: Path) -> list[Path]:
    """Where a run may open files: the test's folder (its private folder aside), the package
    and Python's own libraries, and the kernel's views of this process and devices."""
    paths = sysconfig.get_paths()
    roots = [
        sandbox,
        ROOT,
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path("/proc"),
        Path("/dev"),
        Path("/sys"),
    ]
    roots += [Path(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    roots += [Path(p) for p in sys.path if p]
    import matplotlib  # the figures of graph and sensitivity read its font cache

    roots += [Path(matplotlib.get_cachedir()), Path(matplotlib.get_configdir())]
    return [root.resolve() for root in roots]


# ---------------------------------------------------------------------------------------------
# Random values, keys and texts


def _deep(rng: random.Random, depth: int):
    node = rng.random()
    for _ in range(depth):
        node = [node] if rng.random() < 0.5 else {"k": node}
    return node


def random_value(rng: random.Random, foreign: list[str]):
    """A random YAML-able value: extremes of every type, paths (`foreign`: paths a shared file
    must not read), text with control characters, deep and large containers."""
    kind = rng.randrange(7)
    if kind == 0:
        return rng.choice(
            [0, -1, 1, 2, 3, 255, 256, 4096, 2**31, 2**63, -(2**63), 10**30, rng.randint(-999, 999)]
        )
    if kind == 1:
        return rng.choice([math.nan, math.inf, -math.inf, -0.0, 1e-320, 1e308, 0.5, rng.uniform(-5, 5)])
    if kind == 2:
        texts = ["", " ", "auto", "magma", "random", "disk", "image", "#fff", "#zzzzzz", "gif", "short_side"]
        texts += ["\x1b[31mred\x1b[0m", "a\nb", "\u202etxt.gif", "\x00", "x" * 3000, "images/maze.png"]
        texts += ["/dev/zero", "/nonexistent/x.png", "🦠", "1e999", "0x1f", "~", "."]
        return rng.choice(texts + foreign)
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return rng.choice([[], [1, 2], ["magma", "ice"], [[1.0, -1.0], [-1.0]], list(range(300))])
    if kind == 5:
        return rng.choice([{}, {"path": rng.choice(foreign or ["x.png"])}, {"a": 1}, {1: 2}, {None: "x"}])
    return _deep(rng, rng.choice([3, 40, 70]))


def random_key(rng: random.Random, near: str | None = None):
    """A key: a typo of `near`, one of another section, or odd text and types."""
    keys = ["name", "seed", "canvas", "width", "agents", "count", "density", "spawn", "image", "path"]
    keys += ["model", "run", "steps", "palette", "names", "output", "formats", "world", "species"]
    keys += ["", "a.b", "__class__", "\x1b]0;x\x07", "<<", 1, 2.5, None, True]
    if near and rng.random() < 0.4:
        chars = list(near)
        chars.insert(rng.randrange(len(chars) + 1), rng.choice("xe_ "))
        return "".join(chars)
    return rng.choice(keys)


def _nodes(node, path=()):
    """(path, value) of every value inside `node` (the root excluded)."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield (*path, key), value
        yield from _nodes(value, (*path, key))


def _parent(data, path):
    for key in path[:-1]:
        data = data[key]
    return data


def mutate_data(data, rng: random.Random, foreign: list[str]):
    """1 to 3 random edits of a parsed preset: a value replaced, a key removed, added or
    renamed, a value wrapped in a list or a mapping, two values swapped, a list item doubled."""
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 3)):
        nodes = list(_nodes(data))
        if not isinstance(data, dict) or not nodes:
            return random_value(rng, foreign)
        path, value = rng.choice(nodes)
        parent, key = _parent(data, path), path[-1]
        op = rng.randrange(7)
        if op in (0, 1):
            parent[key] = random_value(rng, foreign)
        elif op == 2:
            del parent[key]
        elif op == 3 and isinstance(parent, dict):
            parent[random_key(rng, str(key))] = random_value(rng, foreign)
        elif op == 4 and isinstance(parent, dict):
            parent[random_key(rng, str(key))] = parent.pop(key)
        elif op == 5:
            parent[key] = rng.choice([[value], {"v": value}, str(value)])
        else:
            other_path, other = rng.choice(nodes)
            if other_path[: len(path)] != path and path[: len(other_path)] != other_path:
                parent[key], _parent(data, other_path)[other_path[-1]] = other, value
            elif isinstance(parent, list):
                parent.append(value)
    return data


SNIPPETS = [
    "!!python/object/apply:os.system ['echo owned']",
    "!!python/name:os.system",
    "&a [*a]",
    "*nowhere",
    "&x [1, 2]\nother: *x",
    "\t",
    "{",
    "[1, 2",
    '"unterminated',
    "%YAML 1.1\n---\n",
    "\n---\nsecond: document\n",
    "<<: {seed: 1}",
    "? [complex, key]\n: 1",
    "!!binary aGVsbG8=",
    "1e999",
    "0o777",
    "\x00",
    "\x1b[2J",
    "\u202e",
    "\ufeff",
    ": : :",
    "- - -",
    "name: dup\nname: dup",
]


def mutate_text(text: str, rng: random.Random) -> str:
    """The YAML text cut short, a span removed, a snippet or control characters inserted, a
    line doubled or moved."""
    for _ in range(rng.randint(1, 2)):
        op, at = rng.randrange(5), rng.randrange(len(text) + 1)
        if op == 0:
            text = text[:at]
        elif op == 1:
            text = text[:at] + text[at + rng.randint(1, 40) :]
        elif op == 2:
            text = text[:at] + rng.choice(SNIPPETS) + text[at:]
        elif op == 3:
            text = (
                text[:at]
                + "".join(chr(rng.randrange(0, 0x3000)) for _ in range(rng.randint(1, 8)))
                + text[at:]
            )
        else:
            lines = text.split("\n")
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(lines))
            text = "\n".join(lines)
    return text


def shorter(distance, most: float):
    """A distance, or each keyframe of a scheduled one (each end of a followed one's range), at
    most `most` pixels."""
    if isinstance(distance, dict) and isinstance(distance.get("keys"), dict):
        return {**distance, "keys": {k: min(v, most) for k, v in distance["keys"].items()}}
    if isinstance(distance, dict) and isinstance(distance.get("range"), list):  # docs/audio.md
        return {**distance, "range": [min(v, most) for v in distance["range"]]}
    return min(distance, most)


def shrunk(data: dict) -> dict:
    """A curated preset cut to a canvas, agents and run that render in milliseconds."""
    data = copy.deepcopy(data)
    data["canvas"] = {**data.get("canvas", {}), "width": 40, "height": 24}
    if "depth" in data["canvas"]:  # a 3D preset: a small volume seen in a small frame
        data["canvas"]["depth"] = 16
        data["camera"] = {**data.get("camera", {}), "width": 32, "height": 24, "samples": 16}
    agents = data.setdefault("agents", {})
    agents.pop("density", None)
    agents["count"] = 300
    data["run"] = {**data.get("run", {}), "steps": 6, "steps_per_frame": 3, "warmup": 0}
    data.get("output", {}).pop("loop_frames", None)  # a curated loop's frames outlast 2 frames
    for model in [data.get("model", {})] + [s.get("model", {}) for s in data.get("species", [])]:
        if data.get("model", {}).get("units") != "short_side" and "sensor_distance" in model:
            model["sensor_distance"] = shorter(model["sensor_distance"], 9)
    return data


def cheap(preset) -> bool:
    """Whether a preset renders on a CPU in a blink."""
    return (
        preset.canvas.width * preset.canvas.height <= 96 * 96
        and preset.agents.count <= 4000
        and preset.run.steps + preset.run.warmup <= 40
        and preset.frames <= 16
    )


def _dump(data) -> str:
    try:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except yaml.YAMLError:
        return "name: unrepresentable\n"


# ---------------------------------------------------------------------------------------------
# The sandbox: a folder to work in, a private image beside it, an earlier render to keep


def _tree(folder: Path, skip: tuple[Path, ...] = ()) -> dict[str, bytes]:
    files = {}
    for path in sorted(folder.rglob("*")):
        if any(path == s or path.is_relative_to(s) for s in skip):
            continue
        if path.is_symlink():
            files[str(path.relative_to(folder))] = b"link:" + os.fsencode(os.readlink(path))
        elif path.is_file():
            files[str(path.relative_to(folder))] = path.read_bytes()
    return files


class Sandbox:
    """cwd is root/work; inputs in work/in, outputs in work/out; root/private holds an image and
    text no run may read (work/in/link.png leads there)."""

    def __init__(self, root: Path, capsys, mode: str):
        self.root, self.capsys, self.mode = root, capsys, mode
        self.work, self.private = root / "work", root / "private"
        self.inputs, self.out = self.work / "in", self.work / "out"
        for folder in (self.inputs, self.out, self.private, root / "systmp"):
            folder.mkdir(parents=True, exist_ok=True)
        shutil.copytree(ROOT / "presets" / "images", self.inputs / "images")
        secret = np.zeros((16, 16), np.uint8)
        secret[::2, ::3] = 201
        save_image(self.private / "secret.png", secret)
        (self.private / "secret.yaml").write_text("name: secret\n")
        (self.inputs / "link.png").symlink_to(self.private / "secret.png")
        self.foreign = [
            str(self.private / "secret.png"),
            "../private/secret.png",
            "in/../../private/secret.png",
            "in/link.png",
            "~/secret.png",
            str(self.private / "secret.yaml"),
        ]
        self.roots = _allowed_roots(root)
        self.count = {"rc0": 0, "rc2": 0, "validate": 0, "skipped": 0}
        keep = build_preset(shrunk(yaml.safe_load((ROOT / "presets" / "veins.yaml").read_text())), "k")
        self.keep_path = self.inputs / "keep.yaml"
        self.keep_path.write_text(keep.to_yaml().replace(f"name: {keep.name}", "name: keep", 1))
        self.run("keep", ["render", str(self.keep_path), "--out", str(self.out), *FLAGS], expect=0)
        assert str(self.keep_path) in self.opened  # the audit hook sees what a run opens
        self.keep = _tree(self.out)
        assert len(self.keep) == 4  # gif, mp4, png and json of the earlier render

    def run(self, case: str, argv: list[str], expect: int | None = None) -> int:
        """cli.main(argv) with every rule of the module's docstring checked."""
        global _OPENED
        where = f"PHYSARUM_FUZZ_SEED={SEED} case {self.mode}-{case}: physarum {' '.join(argv)[:400]!r}"
        outside, before = _tree(self.root, (self.out, self.root / "systmp")), _tree(self.out)
        self.capsys.readouterr()
        _OPENED = []
        try:
            code = cli.main(argv)
        except SystemExit as exit_:
            code = exit_.code
        except BaseException as error:  # a traceback: the bug the fuzz looks for
            raise AssertionError(f"{where}: raised {type(error).__name__}: {error}") from error
        finally:
            opened, _OPENED = _OPENED, None
            self.opened = opened
        out, err = self.capsys.readouterr()
        self.err = err
        report = f"{where}\nexit {code}\nstderr: {err[-2000:]!r}"
        assert code in (0, 2), report
        assert expect is None or code == expect, report
        assert "Traceback" not in err, report
        assert all(line.isprintable() for line in (out + err).splitlines()), report
        assert code == 0 or "error: " in err, report
        assert _tree(self.root, (self.out, self.root / "systmp")) == outside, (
            f"wrote outside the outputs: {report}"
        )
        after = _tree(self.out)
        printed = [line.split(" ") for line in out.splitlines() if code == 0]  # --quiet: FORMAT PATH BYTES
        written = {
            str((self.work / parts[1]).resolve().relative_to(self.out.resolve()))
            for parts in printed
            if len(parts) == 3 and parts[0] in (*ALL_FORMATS, "json", "stats")
        }
        assert code == 0 or after == before, f"changed the outputs though it failed: {report}"
        assert set(before) <= set(after), f"an earlier output was lost: {report}"
        changed = sorted(name for name in before if before[name] != after[name] and name not in written)
        assert not changed, f"changed earlier files it did not write: {changed}: {report}"
        for name in opened:
            path = Path(name) if os.path.isabs(name) else self.work / name
            resolved = path.resolve()
            assert not resolved.is_relative_to(self.private.resolve()), f"read {name}: {report}"
            assert any(resolved.is_relative_to(root) for root in self.roots), f"read {name}: {report}"
        self.count[f"rc{code}"] += 1
        return code

    def render_or_validate(self, case: str, path: Path, settings: list[str] = ()) -> None:
        """Render a preset file when it is cheap or fails anyway; validate it when it is costly."""
        try:
            preset = load_preset(path, list(settings))
        except Exception:  # refused (or a bug, which the CLI run shows with the case's seed)
            preset = None
        if preset is not None and not cheap(preset):
            self.count["validate"] += 1
            self.run(case, ["validate", str(path)])
            return
        self.run(
            case, ["render", str(path), *[f"--set={s}" for s in settings], "--out", str(self.out), *FLAGS]
        )


@pytest.fixture
def sandbox(tmp_path, capsys, monkeypatch, request):
    root = tmp_path / "fuzz"
    (root / "work").mkdir(parents=True)
    monkeypatch.chdir(root / "work")
    monkeypatch.setattr(tempfile, "tempdir", str(root / "systmp"))
    box = Sandbox(root, capsys, request.node.name.removeprefix("test_fuzz_"))
    yield box
    print(f"fuzz {box.mode} (seed {SEED}): {box.count}")


def cases(n: int) -> range:
    return range(max(1, round(n * SCALE)))


# ---------------------------------------------------------------------------------------------
# The fuzz


def test_fuzz_presets(sandbox):
    """Mutated curated presets: their data and their YAML text, rendered or validated."""
    for number in cases(80):
        rng = random.Random(f"{SEED}-presets-{number}")
        source = CURATED[number % len(CURATED)]
        data = shrunk(yaml.safe_load(source.read_text()))
        data = mutate_data(data, rng, []) if rng.random() < 0.6 else data
        text = _dump(data)
        if rng.random() < 0.5:
            text = mutate_text(text, rng)
        path = sandbox.inputs / f"{source.stem}-{number}.yaml"
        path.write_bytes(text.encode("utf-8", "surrogatepass") if rng.random() < 0.95 else os.urandom(300))
        sandbox.render_or_validate(str(number), path)


def test_fuzz_settings(sandbox):
    """Random --set KEY=VALUE over a small preset: real keys and odd ones, YAML values and junk."""
    data = shrunk(yaml.safe_load((ROOT / "presets" / "rivals.yaml").read_text()))
    path = sandbox.inputs / "base.yaml"
    path.write_text(_dump(data))
    keys = [".".join(map(str, p)) for p, _ in _nodes(data)] + ["world.walls.path", "agents.image", "x.y.z"]
    for number in cases(50):
        rng = random.Random(f"{SEED}-settings-{number}")
        settings = []
        for _ in range(rng.randint(1, 3)):
            key = rng.choice(keys) if rng.random() < 0.8 else str(random_key(rng, rng.choice(keys)))
            value = random_value(rng, [])
            raw = _dump(value).removesuffix("\n...\n") if rng.random() < 0.7 else mutate_text(str(value), rng)
            settings.append(f"{key}={raw.strip()}" if rng.random() < 0.95 else rng.choice(["=", "x", "a.=1"]))
        sandbox.render_or_validate(str(number), path, settings)


def _mutated_preset_text(sandbox: Sandbox, rng: random.Random) -> str:
    """The earlier render's embedded text, mutated: its data (with foreign image paths), its text,
    or its header line."""
    text = json.loads(sandbox.keep["keep/keep-s" + _keep_seed(sandbox) + ".json"])["preset_yaml"]
    header, body = text.split("\n", 1)
    choice = rng.randrange(4)
    if choice == 0:
        data = yaml.safe_load(body)
        for key in rng.sample(["world.walls", "world.food", "agents", "world.trail_image"], 1):
            section, _, leaf = key.partition(".")
            if leaf:
                data.setdefault("world", {})[leaf] = {"path": rng.choice(sandbox.foreign)}
            else:
                data["agents"].update(spawn="image", image=rng.choice(sandbox.foreign))
        body = _dump(data)
    elif choice == 1:
        body = _dump(mutate_data(yaml.safe_load(body), rng, sandbox.foreign))
    elif choice == 2:
        body = mutate_text(body, rng)
    else:
        header = rng.choice(
            ["# physarum \x1b[31m9.9, output 99", "# physarum 0.0\u202e, output 1", header + "\x07"]
        )
    return f"{header}\n{body}"


def _keep_seed(sandbox: Sandbox) -> str:
    name = next(n for n in sandbox.keep if n.endswith(".json"))
    return name.rsplit("-s", 1)[1].removesuffix(".json")


def _keep_bytes(sandbox: Sandbox, fmt: str) -> bytes:
    return next(data for name, data in sandbox.keep.items() if name.endswith(f".{fmt}"))


def _from_file(sandbox: Sandbox, rng: random.Random, number: int) -> Path:
    """A file to render from: random bytes, a real output cut or bit-flipped, or a real output
    whose embedded preset is mutated (JSON, PNG and GIF)."""
    fmt = rng.choice(["gif", "png", "json", "mp4"])
    path = sandbox.inputs / f"from-{number}.{rng.choice([fmt, fmt, 'yaml', 'txt'])}"
    kind = rng.randrange(4)
    if kind == 0:
        magic = rng.choice(
            [b"", b"GIF89a", b"\x89PNG\r\n\x1a\n", b'{"preset_yaml": ', b"\x00\x00\x00\x18ftyp"]
        )
        path.write_bytes(magic + rng.randbytes(rng.randrange(0, 600)))
    elif kind == 1:
        data = bytearray(_keep_bytes(sandbox, fmt))
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data[: rng.randrange(len(data) + 1)] if rng.random() < 0.5 else data))
    elif fmt in ("json", "mp4"):
        document = json.loads(_keep_bytes(sandbox, "json"))
        document["preset_yaml"] = (
            _mutated_preset_text(sandbox, rng) if rng.random() < 0.85 else random_value(rng, [])
        )
        path = path.with_suffix(".json")
        path.write_text(
            json.dumps(document) if rng.random() < 0.9 else json.dumps(document)[: rng.randrange(200)]
        )
    else:
        text = _mutated_preset_text(sandbox, rng)
        with Image.open(io.BytesIO(_keep_bytes(sandbox, fmt))) as image:
            image.load()
            path = path.with_suffix(f".{fmt}")
            if fmt == "png":
                info = PngImagePlugin.PngInfo()
                info.add_itxt("physarum", text)
                image.save(path, pnginfo=info)
            else:
                image.save(path, comment=text.encode("utf-8", "surrogatepass"))
    return path


def test_fuzz_from(sandbox):
    """render --from random bytes and crafted outputs: confined, bounded, one message."""
    for number in cases(90):
        rng = random.Random(f"{SEED}-from-{number}")
        path = _from_file(sandbox, rng, number)
        try:  # a carried preset that would render slowly is skipped; a refused one is run
            from physarum.render.formats.registry import read_embedded

            text = read_embedded(path)
            preset = build_preset(yaml.safe_load(text), "x", base=sandbox.work)
        except Exception:
            preset = None
        if preset is not None and not cheap(preset):
            sandbox.count["skipped"] += 1
            continue
        sandbox.run(
            str(number), ["render", "--from", str(path.relative_to(sandbox.work)), "--out", "out", *FLAGS]
        )
    assert sandbox.count["rc2"] >= 10  # the crafted files are refused, not all skipped


def test_fuzz_sweeps(sandbox):
    """Mutated example sweeps (their data and their text), listed with `sweep --dry-run`, which
    expands every job and writes nothing."""
    sources = sorted((ROOT / "sweeps").glob("*.yaml"))
    for number in cases(40):
        rng = random.Random(f"{SEED}-sweeps-{number}")
        source = sources[number % len(sources)]
        data = yaml.safe_load(source.read_text())
        text = _dump(mutate_data(data, rng, []) if rng.random() < 0.7 else data)
        if rng.random() < 0.4:
            text = mutate_text(text, rng)
        path = sandbox.inputs / f"sweep-{number}.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        sandbox.run(str(number), ["sweep", str(path), "--dry-run", "--out", str(sandbox.out)])


# ---------------------------------------------------------------------------------------------
# The commands beside render: graph, sensitivity, and a sweep's folder read back


def _odd_number(rng: random.Random, small: list, large: list) -> str:
    """A flag's value: mostly a small sensible one, sometimes huge, negative, not finite or junk."""
    choice = rng.random()
    if choice < 0.6:
        return str(rng.choice(small))
    if choice < 0.85:
        return str(rng.choice(large))
    return rng.choice(["nan", "inf", "-inf", "1e309", "0x10", "", " ", "1,,2", "five", "\x1b[2J", "½"])


def _small_preset(sandbox: Sandbox, rng: random.Random, number: int, mode: str) -> Path:
    """A shrunk curated preset of no world (graph and sensitivity measure plain presets, and a
    world preset is refused by sensitivity anyway) with a random canvas and agent count."""
    data = shrunk(
        yaml.safe_load(
            (ROOT / "presets" / rng.choice(["quickstart", "veins", "spots"])).with_suffix(".yaml").read_text()
        )
    )
    data["canvas"] = {"width": rng.choice([16, 24, 40, 56]), "height": rng.choice([16, 24, 40])}
    data["agents"]["count"] = rng.choice([1, 2, 3, 4, 7, 50, 300, 900])
    for model in [data.get("model", {})]:
        if "sensor_distance" in model:
            model["sensor_distance"] = shorter(model["sensor_distance"], 3)
    path = sandbox.inputs / f"{mode}-{number}.yaml"
    path.write_text(_dump(data))
    return path


def test_fuzz_graph(sandbox):
    """`physarum graph` with random --at, --every, --threshold and --min-area (huge, negative, not
    finite, junk: a --min-area of 1e10 once took 22.5 GB) over small presets of random sizes."""
    for number in cases(16):
        rng = random.Random(f"{SEED}-graph-{number}")
        path = _small_preset(sandbox, rng, number, "graph")
        flags = []
        if rng.random() < 0.5:
            flags += [
                f"--at={','.join(_odd_number(rng, [1, 3, 6], [0, 7, 10**9]) for _ in range(rng.randint(1, 3)))}"
            ]
        elif rng.random() < 0.5:
            flags += [f"--every={_odd_number(rng, [1, 2, 3], [0, -1, 10**12])}"]
        if rng.random() < 0.6:
            flags += [f"--threshold={_odd_number(rng, ['otsu', 0.1, 0.5, 1], [0, 2, -0.5, 1e-300])}"]
        if rng.random() < 0.7:
            flags += [f"--min-area={_odd_number(rng, [1, 2, 16, 100], [0, -3, 10**10, 10**30])}"]
        out = str(sandbox.out / f"graph-{number}")  # its own folder: a graph replaces its earlier files
        sandbox.run(str(number), ["graph", str(path), *flags, "--out", out, *FLAGS])
    assert sandbox.count["rc0"] >= 1 and sandbox.count["rc2"] >= 1


def test_fuzz_sensitivity(sandbox):
    """`physarum sensitivity` with random --twins, --at, --steps, --threshold, planes and agent
    counts (1 to 3 agents and a NaN threshold once gave tracebacks or wrong messages)."""
    keys = [
        "model.decay",
        "model.deposit",
        "model.turn_angle",
        "model.sensor_angle",
        "canvas.width",
        "model.decai",
    ]
    for number in cases(14):
        rng = random.Random(f"{SEED}-sensitivity-{number}")
        path = _small_preset(sandbox, rng, number, "sensitivity")
        if number % 2:  # sensible flags: the preset decides (1 to 3 agents: a traceback once)
            out = str(sandbox.out / f"sensitivity-{number}")
            flags = [f"--steps={rng.randint(1, 4)}", *rng.choice([[], ["--twins", str(rng.randint(1, 9))]])]
            sandbox.run(str(number), ["sensitivity", str(path), *flags, "--out", out, *FLAGS])
            continue
        flags = [f"--steps={_odd_number(rng, [1, 2, 4], [0, -2])}"]
        if rng.random() < 0.6:
            flags += [f"--twins={_odd_number(rng, [1, 2, 4, 8], [0, 65, 10**6])}"]
        if rng.random() < 0.3:
            flags += [f"--at={_odd_number(rng, [1, 2], [0, -1])}"]
        if rng.random() < 0.4:
            for _ in range(2 if rng.random() < 0.9 else 1):
                low, high = sorted([rng.choice([0.01, 0.1, 0.2, 1.0, 3.0]) for _ in range(2)])
                count = _odd_number(rng, [1, 2], [0, 2000])
                spec = (
                    f"{rng.choice(keys)}={low}:{high}:{count}"
                    if rng.random() < 0.85
                    else mutate_text("k=1:2:3", rng)
                )
                flags += ["--plane", spec]
            flags += (
                [f"--threshold={_odd_number(rng, [0, 0.01, -0.1], [1e308, -1e308])}"]
                if rng.random() < 0.6
                else []
            )
        out = str(sandbox.out / f"sensitivity-{number}")  # its own folder, as for graph
        sandbox.run(str(number), ["sensitivity", str(path), *flags, "--out", out, *FLAGS])
    assert sandbox.count["rc0"] >= 1 and sandbox.count["rc2"] >= 1


def _deep_json(rng: random.Random) -> str:
    depth = rng.choice([10, 70, 5000, 200_000])
    return "[" * depth + "]" * depth if rng.random() < 0.7 else '{"a":' * depth + "1" + "}" * depth


def test_fuzz_sweep_folders(sandbox):
    """A sweep's folder holds files a stranger may have written: manifest lines and job sidecars
    (random JSON, junk, nested 200000 deep, huge) read back by `sweep --dry-run`."""
    source = sorted((ROOT / "sweeps").glob("*.yaml"))[0]
    sweep_path = sandbox.inputs / "sweep.yaml"
    sweep_path.write_text(source.read_text())
    from physarum.render import sweep as sweeps

    sweep = sweeps.load_sweep(sweep_path)
    folder = sandbox.out / sweep.name
    for number in cases(10):
        rng = random.Random(f"{SEED}-sweep-folders-{number}")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        lines = []
        for job in rng.sample(sweep.jobs, min(len(sweep.jobs), rng.randint(1, 4))):
            outputs = {kind: f"{job.name}/{job.name}.{kind}" for kind in (*job.preset.output.formats, "json")}
            (folder / job.name).mkdir(exist_ok=True)
            for local in outputs.values():
                (folder / local).write_bytes(os.urandom(rng.randint(0, 64)))
            choice = rng.random()
            sidecar = (
                _deep_json(rng)
                if choice < 0.4
                else json.dumps({"preset": job.preset.portable_dump()})
                if choice < 0.6
                else mutate_text(json.dumps({"preset": job.preset.portable_dump()}), rng)
            )
            (folder / outputs["json"]).write_text(sidecar, encoding="utf-8", errors="surrogatepass")
            record = {
                "id": job.id,
                "status": rng.choice(["done", "failed", "running", 5]),
                "outputs": outputs,
            }
            lines.append(json.dumps(record) if rng.random() < 0.6 else _deep_json(rng))
            if rng.random() < 0.3:
                lines.append(mutate_text(lines[-1], rng))
        (folder / "manifest.jsonl").write_text(
            "\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass"
        )
        before = _tree(sandbox.out)
        sandbox.run(str(number), ["sweep", str(sweep_path), "--dry-run", "--out", str(sandbox.out)])
        assert _tree(sandbox.out) == before  # a dry run writes nothing


# ---------------------------------------------------------------------------------------------
# Checkpoints: `render --resume` of a damaged checkpoint and frame journal

CHECKPOINT_STEP = 8  # of the fixture's 12 steps, 3 a frame: 2 frames in its journal's prefix
MEMORY_MAX = 1536 << 20  # the most a resume case may grow the process's resident memory by
CASE_SECONDS = 20


@pytest.fixture(scope="session")
def checkpointed(tmp_path_factory):
    """One small real render with checkpoints (steps 4, 8, 12 of 12; GIF, MP4, PNG) made once a
    session, and the clean resume of its checkpoint of step 8: (checkpoint, journal, {format:
    bytes} of that resume's outputs)."""
    folder = tmp_path_factory.mktemp("checkpointed")
    data = shrunk(yaml.safe_load((ROOT / "presets" / "veins.yaml").read_text()))
    data.update(name="ck", seed=5)
    data["run"].update(steps=12)
    data["output"]["loop_mode"] = "none"  # a looped render keeps no frame journal
    path = folder / "ck.yaml"
    path.write_text(_dump(data))
    out = folder / "out"
    assert cli.main(["render", str(path), "--checkpoint-every", "4", "--out", str(out), *FLAGS]) == 0
    checkpoint = out / "ck" / f"ck-s5-checkpoint-{CHECKPOINT_STEP}.npz"
    (journal,) = (out / "ck").glob("ck-s5-journal-*.bin")
    again = folder / "again"
    assert cli.main(["render", "--resume", str(checkpoint), "--out", str(again), *FLAGS]) == 0
    reference = {p.suffix[1:]: p.read_bytes() for p in (again / "ck").iterdir() if p.suffix != ".json"}
    assert set(reference) == {"gif", "mp4", "png"}
    assert reference["gif"] == (out / "ck" / "ck-s5.gif").read_bytes()  # the journal re-fed
    return checkpoint, journal, reference


def _members(data: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def _zip(members: list[tuple[str, bytes]]) -> bytes:
    """An .npz of these (name, .npy bytes), as a checkpoint's is written."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(
                zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED
            )
    return buffer.getvalue()


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def _npy_header(data: bytes, rng: random.Random) -> bytes:
    """The .npy bytes with their header's shape, dtype or order changed (the data kept)."""
    header = repr(
        {
            "descr": rng.choice(["<i4", "<i2", "<f4", "<f8", ">i4", "|u1", "<U8", "|O", "<i8", "V12"]),
            "fortran_order": rng.random() < 0.2,
            "shape": rng.choice(
                [(), (0,), (1, 2, 300), (2, 2, 300), (1, 24, 40), (2**40,), (2**31, 2**31), (-1,)]
            ),
        }
    )
    header += " " * (-(len(header) + 11) % 64) + "\n"
    version = rng.choice([b"\x01\x00", b"\x02\x00", b"\x03\x00", b"\x09\x09"])
    width = "<H" if version == b"\x01\x00" else "<I"
    cut = rng.choice([len(header), 0, 5, len(header) // 2, len(header) - 1, 65535])  # one right
    length = struct.pack(width, cut)
    start = 10 + int.from_bytes(data[8:10], "little")
    return b"\x93NUMPY" + version + length + header.encode() + data[start:]


def _patch_sizes(data: bytes, rng: random.Random) -> bytes:
    """A member's declared uncompressed (or stored) size in the central directory inflated."""
    data = bytearray(data)
    entries = [i for i in range(len(data) - 4) if data[i : i + 4] == b"PK\x01\x02"]
    at = rng.choice(entries) + rng.choice([20, 24])
    data[at : at + 4] = struct.pack("<I", rng.choice([0, 1, 2**31, 0xFFFFFFFE, rng.randrange(2**32)]))
    return bytes(data)


def _damage_members(members: dict[str, bytes], rng: random.Random, journal: str, kind: int) -> str:
    """Damage the checkpoint's members in place (the `kind`th way of 8); what was done."""
    names = sorted(members)
    if kind == 0:
        a, b = rng.sample(names, 2)
        members[a], members[b] = members[b], members[a]
        return f"swapped {a} {b}"
    if kind == 1:
        extra = rng.choice(["extra.npy", "position.npy.npy", "../x.npy", "trail", "journal.npy"])
        members[extra] = rng.choice([_npy(1), _npy(np.zeros(10**6, np.uint8)), b"junk"])
        return f"added {extra}"
    if kind == 2:
        del members[rng.choice(names)]
        return "removed a member"
    if kind == 3:
        name = rng.choice(names)
        members[name] = _npy_header(members[name], rng)
        return f"header of {name}"
    if kind == 4:
        key = rng.choice(
            [
                "step",
                "frames",
                "format_version",
                "output_version",
                *(["journal_frames", "journal_bytes"] if journal else []),
            ]
        )
        members[f"{key}.npy"] = _npy(
            rng.choice(
                [
                    np.int64(rng.choice([-1, 0, 3, 4, 2**62, -(2**63), 20_000_001])),
                    np.int32(8),
                    np.float64(8),
                    "8",
                ]
            )
        )
        return f"value of {key}"
    if kind == 5:
        state = {n: np.load(io.BytesIO(members[f"{n}.npy"])) for n in ("position", "heading", "trail")}
        name = rng.choice(sorted(state))
        array = state[name].copy()
        flat = array.reshape(-1)
        fill = {
            "position": [-1, 2**31 - 1, 40 << 16],
            "heading": [-1, 2**15 - 1, 4096],
            "trail": [np.nan, -1.0, np.inf, 1e-39],
        }
        flat[rng.randrange(flat.size)] = rng.choice(fill[name])
        members[f"{name}.npy"] = _npy(array)
        return f"a value of {name}"
    if kind == 6:
        value = rng.choice(
            [
                "x" * 300,
                "../../private/secret.png",
                "ck-journal-0123456789abcdef.bin",
                "\x00",
                "/etc/passwd",
                journal + "\n",
                7,
            ]
        )
        members["journal.npy"] = _npy(value)
        return "journal pointed elsewhere"
    members["preset.npy"] = _npy(rng.choice(["", "\x00" * 9, "x" * (1 << 16), "# physarum 0.0\n{"]))
    return "preset replaced by junk"


def _mutated_checkpoint_preset(text: str, rng: random.Random, foreign: list[str]) -> str:
    """The checkpoint's embedded preset text, mutated as the preset fuzz mutates presets (its
    data, with foreign image paths sometimes, or its text), its header line kept mostly."""
    header, body = text.split("\n", 1)
    if rng.random() < 0.5:
        body = _dump(mutate_data(yaml.safe_load(body), rng, foreign))
    else:
        body = mutate_text(body, rng)
    if rng.random() < 0.15:
        header = rng.choice(["# physarum \x1b[31m9.9, output 99", "", header + "\x07"])
    return f"{header}\n{body}"


def _damage_journal(path: Path, rng: random.Random, sandbox: Sandbox, prefix: int, kind: int) -> str:
    """Damage the journal beside a checkpoint copy (the checkpoint covers its first `prefix`
    bytes) the `kind`th way of 6; what was done."""
    data = bytearray(path.read_bytes())
    if kind == 0:
        path.write_bytes(data[: rng.randrange(prefix)])
        return "journal truncated"
    if kind == 1:
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
        return "journal bytes flipped" if at >= prefix else "journal prefix flipped"
    if kind == 2:  # the first record's stored length huge (the sha256 then differs too)
        data[44:52] = struct.pack("<Q", rng.choice([2**63, 2**40, 0]))
        path.write_bytes(bytes(data))
        return "journal record length"
    if kind == 3:
        path.unlink()
        targets = [sandbox.private / "secret.png", sandbox.private / "secret.yaml", Path("/dev/zero")]
        path.symlink_to(rng.choice([*targets[:2], *targets, path.parent / "nothing"]))
        return "journal a link"
    if kind == 4:
        path.write_bytes(bytes(data) + os.urandom(rng.randrange(1, 5000)))
        return "journal appended to"  # past the prefix: still valid
    path.unlink()
    return "journal removed"  # resumes with the frames after the checkpoint only


def _damaged_checkpoint(
    sandbox: Sandbox, checkpointed, rng: random.Random, number: int
) -> tuple[Path, str, bool]:
    """A copy of the fixture's checkpoint and journal in its own folder under in/, damaged (each
    family of damage in turn, by the case's `number`; the details by `rng`): (the checkpoint,
    what was done, whether it must still resume to the reference bytes)."""
    source, journal, _ = checkpointed
    folder = sandbox.inputs / f"ck-{number}"
    folder.mkdir()
    path, copy_journal = folder / source.name, folder / journal.name
    data = source.read_bytes()
    shutil.copyfile(journal, copy_journal)
    kind, way = number % 7, number // 7
    if kind == 0:
        cut = rng.randrange(len(data))
        path.write_bytes(data[:cut])
        return path, f"truncated at {cut}", False
    if kind == 1:
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(flipped))
        return path, "bytes flipped", True  # a flip the zip ignores (a time) must change nothing
    if kind == 2:
        path.write_bytes(_patch_sizes(data, rng))
        return path, "declared size", True
    members = dict(_members(data))
    if kind == 3:
        text = str(np.load(io.BytesIO(members["preset.npy"])))
        members["preset.npy"] = _npy(_mutated_checkpoint_preset(text, rng, sandbox.foreign))
        path.write_bytes(_zip(list(members.items())))
        return path, "preset mutated", False
    if kind == 4:
        path.write_bytes(data)
        with np.load(source, allow_pickle=False) as archive:
            prefix = int(archive["journal_bytes"])
        what = _damage_journal(copy_journal, rng, sandbox, prefix, way % 6)
        return path, what, what in ("journal bytes flipped", "journal appended to")
    what = _damage_members(members, rng, journal.name, way % 8)
    items = list(members.items())
    rng.shuffle(items) if rng.random() < 0.3 else None  # the members' order is not the format
    path.write_bytes(_zip(items))
    return path, what, False


def _peak_growth(case):
    """Run `case()`; the growth of the process's peak resident memory (VmHWM, reset first)."""
    before = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    case()
    return _status("VmHWM") - before


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) << 10
    raise AssertionError(f"no {key} in /proc/self/status")


def _complete(folder: Path) -> dict[str, bytes]:
    """The outputs of a resume that succeeded, each checked whole: {format: bytes}."""
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix in (".gif", ".png"):
            with Image.open(path) as image:
                for index in range(getattr(image, "n_frames", 1)):
                    image.seek(index)
                    image.load()
        elif path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                [archive[name] for name in archive.files]
        elif path.suffix == ".mp4":
            assert path.read_bytes()[4:8] == b"ftyp", path
        found.setdefault(path.suffix[1:], path.read_bytes())
    return found


# The damages a resume must refuse (a journal's: where the resume reads it, without --set)
MUST_REFUSE = (
    "journal truncated",
    "journal a link",
    "journal prefix flipped",
    "journal record length",
    "removed a member",
    "preset replaced by junk",
)


def test_fuzz_resume(sandbox, checkpointed):
    """`render --resume` of a real checkpoint and journal damaged as an attacker would (cut,
    bytes flipped, members swapped, added, removed, .npy headers and declared sizes changed,
    header and journal values huge or negative, the journal pointed elsewhere, cut, linked out,
    removed, the embedded preset mutated), sometimes a branch (--set) or with --checkpoint-every:
    the fuzz rules, each case under CASE_SECONDS and MEMORY_MAX; exit 0 only for a checkpoint
    still valid (its outputs complete files, the clean resume's bytes where the damage must not
    matter), and a damage a checkpoint must refuse refused."""
    _, _, reference = checkpointed
    branches = [
        "model.decay=0.2",
        "palette.names=[viridis]",
        "run.steps=15",
        "output.formats=[png]",
        "canvas.width=30",
        "agents.count=2",
    ]
    compared = 0  # cases that resumed to the clean resume's bytes
    for number in cases(120):
        rng = random.Random(f"{SEED}-resume-{number}")
        path, what, same = _damaged_checkpoint(sandbox, checkpointed, rng, number)
        flags = []
        if rng.random() < 0.25:
            flags += ["--set", rng.choice(branches)]
        if rng.random() < 0.25:
            flags += ["--checkpoint-every", str(rng.choice([1, 2, 5]))]
        out = sandbox.out / f"resume-{number}"
        argv = ["render", "--resume", str(path.relative_to(sandbox.work)), *flags, "--out", str(out), *FLAGS]
        codes, start = [], time.monotonic()
        growth = _peak_growth(lambda: codes.append(sandbox.run(f"{number} ({what})", argv)))
        seconds = time.monotonic() - start
        where = f"PHYSARUM_FUZZ_SEED={SEED} case resume-{number} ({what}, {flags})"
        assert seconds < CASE_SECONDS, f"{where}: took {seconds:.1f} s"
        assert growth < MEMORY_MAX, f"{where}: grew the peak memory by {growth >> 20} MB"
        if what == "journal removed" and "--set" not in flags:  # the frames after it, and a note
            assert codes[0] == 0 and "not beside it" in sandbox.err, where
        if codes[0] != 0:
            continue
        files = _complete(out)
        if same and not flags:
            outputs = {fmt: files.get(fmt) for fmt in reference}
            assert outputs == reference, f"{where}: resumed to other bytes than the clean resume"
            compared += 1
        read = "--set" not in flags or not what.startswith("journal")  # a branch may not read it
        assert not (read and what in MUST_REFUSE), f"{where}: resumed though the checkpoint is not valid"
    assert sandbox.count["rc0"] >= 2 and sandbox.count["rc2"] >= 10 and compared >= 1
