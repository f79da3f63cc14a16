"""The benchmark harness (render/tools/harness.py): cases by name, timed alike, one table per machine."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from physarum.render.tools import harness

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def registry(monkeypatch):
    """An empty registry of cases for the test (the project's cases left alone)."""
    monkeypatch.setattr(harness, "CASES", {})
    return harness.CASES


def test_quantiles_interpolate_between_the_sorted_values():
    values = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert harness.quantile(values, 0.5) == 3.0
    assert harness.quantile(values, 0.1) == pytest.approx(1.4)
    assert harness.quantile(values, 0.9) == pytest.approx(4.6)
    assert harness.quantile([7.0], 0.9) == 7.0


def test_time_repeats_warms_up_then_times_each_repeat_with_the_peak_memory():
    calls = []
    timing = harness.time_repeats(lambda: calls.append(1), "cpu", repeats=4, warmup=2, per=10)
    assert len(calls) == 6  # two warm-up calls, four timed
    assert len(timing.ms) == 4 and all(ms >= 0 for ms in timing.ms)
    assert timing.peak_kind == "rss" and timing.peak_mib > 0
    traced = harness.time_repeats(
        lambda: bytearray(4 << 20), "cpu", repeats=2, warmup=0, memory="tracemalloc"
    )
    assert traced.peak_kind == "tracemalloc" and traced.peak_mib >= 4


def test_a_case_appends_one_stamped_row_per_measure_to_the_machines_table(registry, tmp_path, capsys):
    @harness.case("toy", size=8, small={"size": 2})
    def toy(run):
        """A toy case: sums SIZE numbers."""
        run.measure(f"sum of {run.size}", lambda: sum(range(run.size)), repeats=3, warmup=1, size=run.size)
        run.record("once", 0.25, note="timed by the case")
        run.record("facts only", same_bytes=True)

    assert (
        harness.main(
            [
                "--cases",
                str(tmp_path / "none"),
                "--out",
                str(tmp_path),
                "--machine",
                "box",
                "case",
                "toy",
                "--small",
            ]
        )
        == 0
    )
    assert (
        harness.main(
            [
                "--cases",
                str(tmp_path / "none"),
                "--out",
                str(tmp_path),
                "--machine",
                "box",
                "case",
                "toy",
                "--size",
                "5",
            ]
        )
        == 0
    )
    table = tmp_path / "table-box.csv"
    with table.open(newline="") as file:
        header = next(csv.reader(file))
    assert tuple(header) == harness.COLUMNS  # one header, rows appended under it
    rows = harness.read_table(table)
    assert [r["variant"] for r in rows] == [
        "sum of 2",
        "once",
        "facts only",
        "sum of 5",
        "once",
        "facts only",
    ]
    first = rows[0]
    assert first["case"] == "toy" and first["repeats"] == "3" and first["warmup"] == "1"
    assert float(first["p10_ms"]) <= float(first["median_ms"]) <= float(first["p90_ms"])
    assert first["params"] == {"size": 2} and first["extra"] == {"size": 2}
    assert rows[3]["params"] == {"size": 5}
    assert float(rows[1]["median_ms"]) == pytest.approx(250.0)
    assert rows[2]["median_ms"] == "" and rows[2]["extra"] == {"same_bytes": True}
    for key in ("machine", "commit", "python", "torch", "numpy", "when"):
        assert key in first
    assert first["python"].count(".") == 2
    assert "table:" in capsys.readouterr().out


def test_a_case_that_needs_cuda_is_skipped_with_its_reason(registry, monkeypatch, tmp_path, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    ran = []
    harness.case("gpu-only", needs="cuda")(lambda run: ran.append(run))
    assert harness.main(["--cases", str(tmp_path / "none"), "--out", str(tmp_path / "out"), "all"]) == 0
    assert not ran and not (tmp_path / "out").exists()
    assert "skipped: needs a CUDA GPU (none here)" in capsys.readouterr().out


def test_options_are_typed_by_their_defaults_and_unknown_ones_refused(registry):
    chosen = harness.Case(
        "c", lambda run: None, None, {"n": 1, "x": 0.5, "name": "a", "flag": False}, {"n": 2}, ""
    )
    assert harness.parse_params(chosen, True, ["--x", "2", "--flag", "--name", "b"]) == {
        "n": 2,
        "x": 2.0,
        "name": "b",
        "flag": True,
    }
    with pytest.raises(SystemExit, match="no option --size"):
        harness.parse_params(chosen, False, ["--size", "3"])
    with pytest.raises(ValueError, match="small names unknown options"):
        harness.case("bad", n=1, small={"m": 2})(lambda run: None)


def test_a_table_of_other_columns_is_refused_not_mixed(tmp_path):
    table = tmp_path / "table-x.csv"
    table.write_text("a,b\n1,2\n")
    with pytest.raises(SystemExit, match="columns are not the harness's"):
        harness.append_rows(table, [{"case": "c"}])


def test_the_projects_cases_load_and_each_says_what_it_measures(monkeypatch):
    import sys

    monkeypatch.setattr(harness, "CASES", {})
    for path in (ROOT / "scripts" / "cases").glob("*.py"):
        monkeypatch.delitem(sys.modules, f"cases_{path.stem}", raising=False)
    harness.load_cases(ROOT / "scripts" / "cases")
    expected = {
        "3d",
        "tune-3d",
        "tune-batch",
        "keyframes",
        "audio",
        "colour",
        "look",
        "volume",
        "outputs",
        "gif",
    }
    expected |= {"mp4-colour", "pipeline", "stream", "explore", "live", "sweep", "sweep-profile", "startup"}
    assert expected | {"resolution", "e2e"} <= set(harness.CASES)
    for chosen in harness.CASES.values():
        assert chosen.doc, chosen.name
        assert chosen.needs in (None, "cuda", "2 gpus")


def test_the_committed_table_holds_the_cpu_cases_rows():
    """benchmarks/unreleased/table-cpu-2core.csv: `all --small` on the 2-core CPU, every row stamped."""
    rows = harness.read_table(ROOT / "benchmarks" / "unreleased" / "table-cpu-2core.csv")
    assert {"look", "colour", "outputs", "gif", "stream", "keyframes"} <= {r["case"] for r in rows}
    assert all(r["commit"] and r["machine"].startswith("cpu-2core") for r in rows)
    assert all(json.dumps(r["extra"]) for r in rows)


# ---------------------------------------------------------------------------------------------
# scripts/cases/e2e.py part table: the curated presets' walls and stage shares in one command


@pytest.fixture
def e2e_case(monkeypatch):
    """scripts/cases/e2e.py, loaded as the harness loads it."""
    monkeypatch.setattr(harness, "CASES", {})
    monkeypatch.delitem(sys.modules, "cases_e2e", raising=False)
    harness.load_cases(ROOT / "scripts" / "cases")
    return sys.modules["cases_e2e"]


def test_the_tables_presets_name_their_reduction_and_a_bad_one_is_refused(e2e_case):
    assert e2e_case.table_entries("quickstart, cosmos:16,") == [("quickstart", None), ("cosmos", 16)]
    for bad in ("cosmos:1", "cosmos:x", "cosmos:-2"):
        with pytest.raises(SystemExit, match="--reduce factor"):
            e2e_case.table_entries(bad)
    cpu = dict(e2e_case.table_entries(e2e_case.TABLE_PRESETS_CPU))
    assert set(cpu) == set(e2e_case.TABLE_PRESETS.split(",")) and cpu["cosmos"] and cpu["panorama"]


def test_stage_shares_divide_the_stages_seconds_largest_first(e2e_case):
    timings = {"total_s": 9.0, "frames_s": 4.0, "stage_colour_s": 1.0, "stage_simulation_s": 3.0}
    assert e2e_case.stage_shares(timings) == {"simulation": 0.75, "colour": 0.25}
    assert e2e_case.stage_shares({"total_s": 1.0}) == {}


def test_the_markdown_table_puts_a_presets_cold_and_warm_walls_on_one_line(e2e_case):
    row = {"preset": "cosmos", "reduce": 16, "startup_and_exit_s": 2.5, "bound": "colour"}
    rows = [
        {
            **row,
            "cache": "cold",
            "wall_s": 30.5,
            "shares": {"colour": 0.6, "simulation": 0.4},
            "load_1min": 3.0,
        },
        {
            **row,
            "cache": "warm",
            "wall_s": 20.25,
            "shares": {"colour": 0.7, "simulation": 0.3},
            "load_1min": 1.5,
        },
    ]
    lines = e2e_case.table_markdown(rows, "a 2-core CPU").splitlines()
    assert "a 2-core CPU" in lines[0]
    assert (
        lines[-1]
        == "| cosmos | --reduce 16 | 30.5 | 20.25 | 2.5 | colour | colour 70%, simulation 30% | 3.0 / 1.5 |"
    )


@pytest.mark.slow
def test_the_table_part_renders_each_preset_cold_then_warm_as_its_own_process(e2e_case, tmp_path):
    opts = e2e_case.options(["--parts", "table", "--table-presets", "quickstart:16"])
    opts.backend, opts.device, opts.set = "torch", "cpu", ["run.steps=5"]  # --set is not applied
    rows = e2e_case.run_parts(opts, None)["table"]
    assert [(r["preset"], r["reduce"], r["cache"]) for r in rows] == [
        ("quickstart", 16, "cold"),
        ("quickstart", 16, "warm"),
    ]
    for row in rows:
        assert row["wall_s"] > row["render_s"] > 0 and row["startup_and_exit_s"] > 0
        assert row["frames"] == 80  # the curated run (400 steps, 5 a frame), not --set's
        assert abs(sum(row["shares"].values()) - 1) < 0.01
        largest = next(iter(row["shares"]))  # the bound stage, an encoder's wait named as the encoder
        assert row["bound"] == (f"encoder {largest[5:]}" if largest.startswith("wait_") else largest)


def test_the_pool_part_renders_with_each_worker_count_and_puts_the_default_back(e2e_case):
    from physarum.render.formats import gif_pool

    default = gif_pool.PIXELS_PER_WORKER
    opts = e2e_case.options(["--backend", "torch", "--device", "cpu", "--set", "run.steps=10"])
    found = e2e_case.pool("quickstart", opts, pairs=1)
    assert gif_pool.PIXELS_PER_WORKER == default
    assert len(found["renders"]) == len(e2e_case.POOL_PIXELS)
    for row in found["renders"]:
        assert row["workers"] >= 1 and row["share"] > 0
        assert row["all"][0] > 0 and row["without the GIF"][0] > 0  # frames_s, then finish_s
    assert [a["workers"] for a in found["pool alone"]] == sorted({r["workers"] for r in found["renders"]})
    assert all(a["forty_frames_s"] > 0 for a in found["pool alone"])


@pytest.mark.slow
def test_the_ends_part_alternates_the_command_and_the_old_entry(e2e_case):
    """Part ends: the first preset warm, through `physarum` and through the old entry
    (OLD_END), alternated, each a whole process timed from outside around its render."""
    opts = e2e_case.options(["--parts", "ends", "--presets", "quickstart"])
    opts.backend, opts.device, opts.set = (
        "torch",
        "cpu",
        ["run.steps=10", "canvas.width=64", "canvas.height=64"],
    )
    rows = e2e_case.run_parts(opts, None)["ends"]
    assert [r["command"] for r in rows] == ["render quickstart, new end", "render quickstart, old end"] * 3
    assert all(r["cache"] == "warm" and r["wall_s"] > r["total_s"] > 0 for r in rows)


def test_a_child_parts_record_is_its_tagged_line_and_a_silent_child_gives_none(e2e_case, tmp_path, capsys):
    """Parts profile and inner read a child's JSON from its line tagged PROFILE or INNER, with the
    child's own Triton cache; a child that prints none adds no row and its stderr is shown."""
    said = (
        "import os, sys; print('noise'); print('INNER {\"cache\": \"%s\"}' % os.environ['TRITON_CACHE_DIR'])"
    )
    assert e2e_case.child_record([sys.executable, "-c", said], {}, tmp_path / "c", "INNER ") == [
        {"cache": str(tmp_path / "c")}
    ]
    failed = "import sys; print('PROFILE {}'); sys.exit('the child failed')"
    assert e2e_case.child_record([sys.executable, "-c", failed], {}, tmp_path, "INNER ") == []
    assert "the child failed" in capsys.readouterr().err


def test_the_commit_stamp_is_heads_unless_the_tree_states_where_it_came_from(monkeypatch, tmp_path):
    """A copy of the tree whose .git is stale (the GPU host's) states its commit in
    PHYSARUM_COMMIT; elsewhere the stamp is HEAD's, and '' outside git."""
    monkeypatch.delenv("PHYSARUM_COMMIT", raising=False)
    head = harness.git_commit(ROOT)
    full = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert head and full.stdout.startswith(head.split("+")[0])
    assert harness.git_commit(tmp_path) == ""
    monkeypatch.setenv("PHYSARUM_COMMIT", "4db8d1e0a1b2")
    assert harness.git_commit(ROOT) == harness.git_commit(tmp_path) == "4db8d1e0a1b2"
