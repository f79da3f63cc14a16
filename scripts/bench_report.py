"""Turn `physarum bench` JSON into the results table of docs/evidence.md ("Speed") and its plot.

Usage: python scripts/bench_report.py benchmarks/0.1.0/h200.json [benchmarks/0.1.0/cpu-2core.json ...]
Writes benchmarks/figures/bench.png and replaces the docs/evidence.md section between the
<!-- bench --> markers with a table of every result.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ORDER = ["prototype", "torch", "torch.compile", "triton", "triton, unsorted", "triton, one after another"]


def load(paths: list[str]) -> list[tuple[dict, dict]]:
    """Every result of the files; where two files measured the same (device, configuration,
    implementation), the later file's row replaces the earlier one."""
    rows: dict[tuple, tuple[dict, dict]] = {}
    for path in paths:
        document = json.loads(Path(path).read_text())
        for row in document["results"]:
            key = (document["environment"]["device"], row["config"], row["implementation"])
            rows[key] = (document["environment"], row)
    order = {name: i for i, name in enumerate(["S", "L", "XL", "X", "CPU"])}
    return sorted(
        rows.values(),
        key=lambda er: (
            "CPU" in er[0]["device"],
            order.get(er[1]["config"], 9),
            ORDER.index(er[1]["implementation"]) if er[1]["implementation"] in ORDER else 9,
        ),
    )


def table(rows: list[tuple[dict, dict]]) -> str:
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


def plot(rows: list[tuple[dict, dict]], out: Path) -> None:
    configs = list(dict.fromkeys(f"{r['config']}\n{env['device']}" for env, r in rows))
    impls = [i for i in ORDER if any(r["implementation"] == i for _, r in rows)]
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
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)


def main(paths: list[str]) -> None:
    rows = load(paths)
    plot(rows, ROOT / "benchmarks" / "figures" / "bench.png")
    readme = ROOT / "docs" / "evidence.md"
    text = readme.read_text()
    section = f"<!-- bench -->\n{table(rows)}\n<!-- /bench -->"
    text = re.sub(r"<!-- bench -->.*<!-- /bench -->", lambda _: section, text, flags=re.S)
    readme.write_text(text)
    print(table(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
