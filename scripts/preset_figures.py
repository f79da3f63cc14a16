"""The figures the README and docs show (docs/figures/), from renders and from the records.

    python3 scripts/preset_figures.py RENDERS_DIR [NAME ...]     # a thumbnail of each preset's still
    python3 scripts/preset_figures.py --sheet OUT.png NAME ...   # a labelled contact sheet
    python3 scripts/preset_figures.py --strip OUT.png SIDECAR.json FRAMES_DIR [N]   # frames of a run
    python3 scripts/preset_figures.py --bench 'benchmarks/0.1.0/bench.json#h200.json,h200-xl.json,h200-x.json,h200-compile-s.json,cpu-2core.json'
    python3 scripts/preset_figures.py --outputs TABLE.csv LABEL               # outputs-LABEL.png
    python3 scripts/preset_figures.py --gif-shrink IN.gif OUT.gif LEVELS FACTOR STRIDE

RENDERS_DIR holds `physarum render --out RENDERS_DIR` results (NAME/NAME-sSEED.png); each
thumbnail is written to docs/figures/preset-NAME.png, 256 pixels on its long side.
The figure of every preview beside its full render is scripts/preview_figure.py's.
--strip puts N (6) frames of a render's `--frames-dir FRAMES_DIR` side by side, evenly over the
frames that are not loop blends, each labelled with its step and the values its scheduled
parameters have there (from the render's sidecar JSON); it needs the physarum package.
--bench turns `physarum bench` JSON (a file of one run, or a record of several keyed by name, as
benchmarks/0.1.0/bench.json) into docs/figures/bench.png and the table of docs/evidence.md between
its <!-- bench --> markers; where two runs measured the same (device, configuration,
implementation), the later one's row is kept.
--outputs draws, per preset, the simulation, colouring and each encoder's busy time beside the
render's wall time, from the rows of the harness's `outputs` case in a table (LABEL names the
figure and filters the table's machine column when it matches one).
--gif-shrink shrinks a rendered 3D GIF (an RGB volume frame per frame) with a GIF budget's own
reductions, for a README figure whose render cannot run here (docs/figures/cosmos-orbit.gif): each
frame given its exact palette again (render/look/volume.py reduce_rgb), then an area downscale by
FACTOR, LEVELS levels shown by their pixels' colours, every STRIDE-th frame counted back from the
last, each shown STRIDE times as long; the comment (the embedded preset) kept.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures"
LONG_SIDE = 256


def thumbnail(still: Path, out: Path) -> None:
    image = Image.open(still).convert("RGB")
    scale = LONG_SIDE / max(image.size)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    image.resize(size, Image.Resampling.LANCZOS).save(out, optimize=True)


def main(folder: str, names: list[str]) -> None:
    root = Path(folder)
    names = names or sorted(p.name for p in root.iterdir() if p.is_dir())
    for name in names:
        stills = sorted((root / name).glob(f"{name}-s*.png"))
        if not stills:
            print(f"{name}: no PNG still in {root / name}", file=sys.stderr)
            continue
        out = FIGURES / f"preset-{name}.png"
        thumbnail(stills[0], out)
        print(out)


def sheet(out: Path, names: list[str], columns: int = 4, tile: int = 256, gap: int = 8) -> None:
    """The thumbnails of `names` in a grid on a dark ground, each labelled with its name."""
    label = 30
    rows = (len(names) + columns - 1) // columns
    width = min(columns, len(names)) * (tile + gap) + gap
    canvas = Image.new("RGB", (width, rows * (tile + label + gap) + gap), (17, 17, 17))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default(size=16)
    for i, name in enumerate(names):
        image = Image.open(FIGURES / f"preset-{name}.png").convert("RGB")
        image.thumbnail((tile, tile))
        x = gap + (i % columns) * (tile + gap)
        y = gap + (i // columns) * (tile + label + gap)
        canvas.paste(image, (x + (tile - image.width) // 2, y + (tile - image.height) // 2))
        draw.text((x + tile // 2, y + tile + label // 2), name, fill=(220, 220, 220), font=font, anchor="mm")
    canvas.save(out, optimize=True)


def smallest_png(image: Image.Image, out: Path) -> None:
    """`image` as a PNG: of at most 256 colours where that file is smaller."""
    image.save(out, optimize=True)
    full = out.stat().st_size
    image.quantize(256, dither=Image.Dither.NONE).save(out, optimize=True)
    if out.stat().st_size > full:
        image.save(out, optimize=True)


def strip(out: Path, sidecar: Path, frames_dir: Path, count: int = 6, gap: int = 4) -> None:
    """`count` frames of a render side by side, labelled with the step each shows and the values
    of the scheduled parameters there; a PNG of at most 256 colours when that is smaller."""
    import json

    from physarum.render.preset.schedule import Schedule, value_at

    data = json.loads(sidecar.read_text())
    run = data["preset"]["run"]
    warmup, steps, every = run.get("warmup", 0), run["steps"], run["steps_per_frame"]
    loop = data.get("loop") or {}
    files = sorted(frames_dir.glob("*.png"))
    # shown frame k is simulated frame first + k; a crossfade's last `blended` frames are blends
    first, pure = loop.get("first_frame", 0), len(files) - loop.get("blended", 0)
    picks = [round(i * (pure - 1) / (count - 1)) for i in range(count)]
    schedules = {
        key.rsplit(".", 1)[-1].replace("_", " "): Schedule(keys=dict(s["keyframes"]), ease=s["ease"])
        for key, s in data.get("schedules", {}).items()
        if "keyframes" in s  # a key resolved from a soundtrack records its digest instead
    }
    label = 26
    tiles = [Image.open(files[k]).convert("RGB") for k in picks]
    width, height = tiles[0].size
    canvas = Image.new("RGB", (count * width + (count - 1) * gap, height + label), (17, 17, 17))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default(size=14)
    for i, (k, tile) in enumerate(zip(picks, tiles)):
        step = warmup + min((first + k + 1) * every, steps)
        values = ", ".join(
            f"{name} {round(float(value_at(s, step, warmup + steps)), 1):g}" for name, s in schedules.items()
        )
        x = i * (width + gap)
        canvas.paste(tile, (x, 0))
        text = f"step {step}" + (f": {values}" if values else "")
        draw.text((x + width // 2, height + label // 2), text, fill=(220, 220, 220), font=font, anchor="mm")
    canvas.save(out, optimize=True)
    small = out.with_suffix(".q.png")
    canvas.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(small, optimize=True)
    if small.stat().st_size < out.stat().st_size:
        small.replace(out)
    else:
        small.unlink()
    print(out, out.stat().st_size, "bytes")


BENCH_ORDER = [
    "prototype",
    "torch",
    "torch.compile",
    "triton",
    "triton, unsorted",
    "triton, one after another",
]


def bench_rows(paths: list[str]) -> list[tuple[dict, dict]]:
    """Every result of the `physarum bench` JSON files (a run, or runs keyed by name)."""
    import json

    rows: dict[tuple, tuple[dict, dict]] = {}
    for path in paths:
        path, _, keys = path.partition("#")  # FILE#NAME,NAME: those runs of a record
        document = json.loads(Path(path).read_text())
        if "results" in document:
            runs = [document]
        else:
            runs = [document[k] for k in keys.split(",")] if keys else list(document.values())
        for run in runs:
            for row in run["results"]:
                key = (run["environment"]["device"], row["config"], row["implementation"])
                rows[key] = (run["environment"], row)
    order = {name: i for i, name in enumerate(["S", "L", "XL", "X", "CPU"])}
    return sorted(
        rows.values(),
        key=lambda er: (
            "CPU" in er[0]["device"],
            order.get(er[1]["config"], 9),
            BENCH_ORDER.index(er[1]["implementation"]) if er[1]["implementation"] in BENCH_ORDER else 9,
        ),
    )


def bench_table(rows: list[tuple[dict, dict]]) -> str:
    lines = [
        "| device | config | implementation | ms/step | agent-steps/s | launches/step | GB/s | x floor |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for env, r in rows:
        size = f"{r['config']}: {r['batch']}x{r['agents']:,} on {r['width']}x{r['height']}"
        launches = "" if r["launches_per_step"] is None else f"{r['launches_per_step']:.0f}"
        lines.append(
            f"| {env['device']} | {size} | {r['implementation']} | {r['ms_per_step']:.3f} | "
            f"{r['agent_steps_per_s']:.2e} | {launches} | {r['achieved_gb_per_s']:.0f} | "
            f"{r['ratio_to_floor']:.1f} |"
        )
    return "\n".join(lines)


def bench(paths: list[str]) -> None:
    """docs/figures/bench.png and docs/evidence.md's bench table from `physarum bench` JSON."""
    import re

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = bench_rows(paths)
    configs = list(dict.fromkeys(f"{r['config']}\n{env['device']}" for env, r in rows))
    impls = [i for i in BENCH_ORDER if any(r["implementation"] == i for _, r in rows)]
    fig, ax = plt.subplots(figsize=(9, 4.8), dpi=110)
    width = 0.8 / max(1, len(impls))
    for k, impl in enumerate(impls):
        xs, ys = [], []
        for c, config in enumerate(configs):
            for env, r in rows:
                if r["implementation"] == impl and f"{r['config']}\n{env['device']}" == config:
                    xs.append(c + (k - (len(impls) - 1) / 2) * width)
                    ys.append(r["agent_steps_per_s"])
        ax.bar(xs, ys, width, label=impl)
    ax.set_yscale("log")
    ax.set_xticks(range(len(configs)), configs, fontsize=8)
    ax.set_ylabel("agent-steps per second")
    ax.set_title("physarum bench: agent-steps/s by configuration and implementation")
    ax.legend(fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(FIGURES / "bench.png")
    evidence = ROOT / "docs" / "evidence.md"
    section = f"<!-- bench -->\n{bench_table(rows)}\n<!-- /bench -->"
    text = re.sub(r"<!-- bench -->.*<!-- /bench -->", lambda _: section, evidence.read_text(), flags=re.S)
    evidence.write_text(text)
    print(bench_table(rows))


def outputs(table: Path, label: str) -> None:
    """docs/figures/outputs-LABEL.png from the harness's `outputs` rows: per preset, the
    simulation, colouring and each encoder's busy time, and the render's wall time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from physarum.render.tools.harness import read_table

    rows = [r for r in read_table(table) if r["case"] == "outputs"]
    if any(r["machine"].startswith(label) for r in rows):
        rows = [r for r in rows if r["machine"].startswith(label)]
    presets: dict[str, dict] = {}
    for row in rows:
        name, _, part = row["variant"].partition(" ")
        entry = presets.setdefault(name, {})
        if part in ("simulation", "colouring"):
            entry[f"{part}_s"] = float(row["median_ms"]) / 1e3
        elif part == "render":
            entry.update(row["extra"]["timings"], total_s=float(row["median_ms"]) / 1e3)
    presets = {name: entry for name, entry in presets.items() if "total_s" in entry}
    parts = ["simulation_s", "colouring_s"]
    parts += sorted({k for entry in presets.values() for k in entry if k.startswith("encode_")})
    fig, ax = plt.subplots(figsize=(11, 0.6 * len(presets) + 1.5))
    height = 0.8 / len(parts)
    names = list(presets)
    for k, part in enumerate(parts):
        values = [presets[name].get(part, 0.0) for name in names]
        ax.barh([i + k * height for i in range(len(names))], values, height, label=part.removesuffix("_s"))
    middle = [i + 0.4 - height / 2 for i in range(len(names))]
    ax.scatter([presets[n]["total_s"] for n in names], middle, marker="|", s=400, color="black", zorder=3,
               label="render (time to every file)")  # fmt: skip
    ax.set_yticks(middle, names)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(f"{label}: time to each file", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(FIGURES / f"outputs-{label}.png", dpi=110)


def gif_shrink(source: str, out: str, levels: int, factor: int, stride: int) -> str:
    """A rendered 3D GIF shrunk as a GIF budget would (see the module's docstring)."""
    import numpy as np
    import torch
    from PIL import ImageSequence

    from physarum.render.formats.gif_file import (
        TRAILER,
        area_downscale,
        frame_block,
        header,
        kept_frames,
        reduce_levels,
        weighted_level_palette,
    )
    from physarum.render.look.volume import reduce_rgb

    with Image.open(source) as image:
        comment = image.info.get("comment", b"")
        delay = image.info.get("duration", 60) * stride
        rgb = [np.asarray(frame.convert("RGB")).copy() for frame in ImageSequence.Iterator(image)]
    blocks, first = [], None
    for number in kept_frames(len(rgb), stride):
        index, palette = reduce_rgb(torch.from_numpy(rgb[number]))
        table = palette.astype(np.uint8).tobytes().ljust(768, b"\0")
        down = area_downscale(index.numpy(), factor)
        shown = weighted_level_palette(table, down, levels)
        first = first or (down.shape, shown)
        blocks.append(frame_block(reduce_levels(down, levels), shown, True, delay))
    (height, width), table = first
    text = comment.decode("utf-8") if isinstance(comment, bytes) else comment
    data = header(width, height, table, 0, text) + b"".join(blocks) + TRAILER
    with open(out, "wb") as file:
        file.write(data)
    return f"{out}: {len(data)} bytes, {width}x{height}, {len(blocks)} frames, {levels} levels"


if __name__ == "__main__":
    if sys.argv[1] == "--sheet":
        sheet(Path(sys.argv[2]), sys.argv[3:], columns=3)
    elif sys.argv[1] == "--bench":
        bench(sys.argv[2:])
    elif sys.argv[1] == "--outputs":
        outputs(Path(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "--gif-shrink":
        print(gif_shrink(sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7])))
    elif sys.argv[1] == "--strip":
        strip(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), *map(int, sys.argv[5:6]))
    else:
        main(sys.argv[1], sys.argv[2:])
