"""One benchmark harness: every measurement of the project is a case registered here by name,
timed alike and written to one table per machine.

A case is a function given a `Run`; it builds what it measures, then hands each timed thing to
`Run.measure` (warm-up calls, then N repeats, each synchronised: CUDA events on a CUDA device,
perf_counter otherwise; the median and quantiles; peak memory) or, for what runs once (a whole
render, a process), to `Run.record` (seconds measured by the case). Each call appends one row to
the machine's table, `OUT/table-MACHINE.csv` (OUT: benchmarks/unreleased by default), stamped with
the machine, GPU, library versions and git commit. A case that needs CUDA skips with its reason
where there is none.

    python -m physarum.render.tools.harness list
    python -m physarum.render.tools.harness case NAME [NAME ...] [--small] [--KEY VALUE ...]
    python -m physarum.render.tools.harness all --small        # every case this machine can run

The cases are modules outside the package (scripts/cases/*.py, found from the working folder or
named with --cases DIR): they are the project's evidence, not part of what a user installs. This
module ships (it is the tools stage's, beside `physarum bench`) so that the GPU host's wheel and
the tests import it as any other module.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

COLUMNS = (
    "when",
    "machine",
    "gpu",
    "commit",
    "python",
    "torch",
    "triton",
    "numpy",
    "case",
    "variant",
    "device",
    "warmup",
    "repeats",
    "median_ms",
    "p10_ms",
    "p90_ms",
    "min_ms",
    "max_ms",
    "peak_mib",
    "peak_kind",
    "params",
    "extra",
)
DEFAULT_OUT = Path("benchmarks") / "unreleased"
DEFAULT_CASES = Path("scripts") / "cases"


class Skip(Exception):
    """A case that cannot run here, with the reason."""


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Run], None]
    needs: str | None  # "cuda", "2 gpus" or None
    params: dict
    small: dict
    doc: str


CASES: dict[str, Case] = {}


def case(name: str, *, needs: str | None = None, small: dict | None = None, **params):
    """Register the decorated function as case NAME. params: its options and their defaults
    (`--KEY VALUE` on the command line, typed by the default); small: the options --small sets
    (a size a 2-core CPU measures in seconds); needs: "cuda" or "2 gpus" (skipped without)."""

    def register(function: Callable[[Run], None]) -> Callable[[Run], None]:
        if name in CASES:
            raise ValueError(f"case {name!r} is registered twice")
        unknown = set(small or {}) - set(params)
        if unknown:
            raise ValueError(f"case {name!r}: small names unknown options {sorted(unknown)}")
        doc = " ".join((function.__doc__ or "").strip().split("\n\n")[0].split())
        CASES[name] = Case(name, function, needs, dict(params), dict(small or {}), doc)
        return function

    return register


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of values, linearly interpolated between the sorted values."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Timing:
    """Milliseconds of each repeat (per unit when `per` was given) and the peak memory."""

    ms: tuple[float, ...]
    peak_mib: float | None
    peak_kind: str

    @property
    def median(self) -> float:
        return statistics.median(self.ms)


def _torch():
    import torch  # start-up: the harness's stamp and listing need no torch

    return torch


def _cuda_ready() -> bool:
    return _cuda_visible() and _torch().cuda.is_available()


def cuda_device(device) -> bool:
    return str(device).startswith("cuda")


def synchronise(device) -> None:
    if cuda_device(device):
        _torch().cuda.synchronize(device)


def rss_mib() -> float:
    """This process's peak resident memory so far (MiB; ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def time_repeats(
    fn: Callable[[], object], device, *, repeats: int, warmup: int, per: float = 1, memory: str = "auto"
) -> Timing:
    """Call fn `warmup` times, then `repeats` times timed: CUDA events around each call on a CUDA
    device (synchronised after), perf_counter between synchronisations otherwise. Peak memory over
    the timed calls: torch.cuda.max_memory_allocated on CUDA; on a CPU the process's peak RSS, or
    with memory="tracemalloc" the peak of Python allocations (slows the calls)."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    for _ in range(warmup):
        fn()
    synchronise(device)
    cuda = cuda_device(device)
    if cuda:
        torch = _torch()
        torch.cuda.reset_peak_memory_stats(device)
    elif memory == "tracemalloc":
        tracemalloc.start()
    times = []
    for _ in range(repeats):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize(device)
            times.append(start.elapsed_time(end) / per)
        else:
            began = time.perf_counter()
            fn()
            synchronise(device)
            times.append((time.perf_counter() - began) * 1e3 / per)
    if cuda:
        return Timing(tuple(times), torch.cuda.max_memory_allocated(device) / 2**20, "cuda_allocated")
    if memory == "tracemalloc":
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return Timing(tuple(times), peak / 2**20, "tracemalloc")
    return Timing(tuple(times), rss_mib(), "rss")


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:  # not installed, or no version: the stamp says so
        return ""


def git_commit(root: Path | None = None) -> str:
    """HEAD's commit (12 digits), `+dirty` when tracked files differ from it; '' outside git.
    PHYSARUM_COMMIT, where set, is the stamp instead: a copy of the tree whose .git is not the
    tree's own (the GPU host's) is stamped with the commit it was sent from."""
    if os.environ.get("PHYSARUM_COMMIT"):
        return os.environ["PHYSARUM_COMMIT"]
    where = str(root or Path.cwd())
    try:
        head = subprocess.run(
            ["git", "-C", where, "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("+dirty" if dirty else "")


def gpu_name() -> str:
    if "torch" not in sys.modules and not _cuda_visible():
        return ""
    torch = _torch()
    return torch.cuda.get_device_name() if torch.cuda.is_available() else ""


def _cuda_visible() -> bool:
    return os.environ.get("CUDA_VISIBLE_DEVICES", "x") != "" and Path("/dev/nvidiactl").exists()


def machine_label(gpu: str) -> str:
    """A table's machine: the GPU's name (`nvidia-h200`) where there is one, else the CPU's cores
    (`cpu-2core`)."""
    if gpu:
        return re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")
    return f"cpu-{os.cpu_count()}core"


def stamp() -> dict:
    """What every row carries: where, on what and on which code it was measured."""
    gpu = gpu_name()
    return {
        "machine": f"{machine_label(gpu)} ({platform.node()}, {os.cpu_count()} cores, {platform.machine()})",
        "gpu": gpu,
        "commit": git_commit(),
        "python": platform.python_version(),
        "torch": _version("torch"),
        "triton": _version("triton"),
        "numpy": _version("numpy"),
    }


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def append_rows(path: Path, rows: list[dict]) -> None:
    """Append rows to the CSV table at path (its header written when it is new). A table written
    with other columns is refused rather than mixed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    if not new:
        with path.open(newline="") as file:
            header = next(csv.reader(file), [])
        if tuple(header) != COLUMNS:
            raise SystemExit(f"{path}: its columns are not the harness's; write to another --out")
    with path.open("a", newline="") as file:
        writer = csv.DictWriter(file, COLUMNS)
        if new:
            writer.writeheader()
        for row in rows:
            writer.writerow({key: _cell(row.get(key)) for key in COLUMNS})


def read_table(path: Path) -> list[dict]:
    """The rows of a table, params and extra decoded."""
    with path.open(newline="") as file:
        rows = list(csv.DictReader(file))
    for row in rows:
        row["params"] = json.loads(row["params"] or "{}")
        row["extra"] = json.loads(row["extra"] or "{}")
    return rows


@dataclass
class Run:
    """One case's run: its options, device and the rows it measured."""

    case: str
    params: dict
    device: str
    stamp: dict
    repeats: int | None = None  # --repeats: overrides each measure's own
    warmup: int | None = None
    rows: list[dict] = field(default_factory=list)

    def __getattr__(self, name: str):
        params = self.__dict__.get("params", {})
        if name in params:
            return params[name]
        raise AttributeError(name)

    def measure(
        self,
        variant: str,
        fn: Callable[[], object],
        *,
        repeats: int = 5,
        warmup: int = 1,
        per: float = 1,
        device=None,
        memory: str = "auto",
        **extra,
    ) -> Timing:
        """Time fn (see time_repeats) and append its row; per divides each repeat's time (ms per
        step when a call runs `per` steps). extra: more columns of the row (JSON)."""
        repeats = self.repeats or repeats
        warmup = warmup if self.warmup is None else self.warmup
        device = device if device is not None else self.device
        timing = time_repeats(fn, device, repeats=repeats, warmup=warmup, per=per, memory=memory)
        self._row(variant, timing.ms, warmup, str(device), timing.peak_mib, timing.peak_kind, extra)
        return timing

    def record(
        self, variant: str, seconds=None, *, peak_mib: float | None = None, peak_kind: str = "", **extra
    ):
        """Append a row for what the case timed itself: seconds (one value or a list of repeats;
        None: a row of facts only, such as a byte-identity check), its peak memory if known, extra."""
        values = [] if seconds is None else list(seconds) if isinstance(seconds, (list, tuple)) else [seconds]
        self._row(variant, tuple(1e3 * s for s in values), 0, self.device, peak_mib, peak_kind, extra)

    def _row(self, variant, ms, warmup, device, peak, kind, extra) -> None:
        row = {
            "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **self.stamp,
            "case": self.case,
            "variant": variant,
            "device": device,
            "warmup": warmup,
            "repeats": len(ms),
            "peak_mib": None if peak is None else round(peak, 2),
            "peak_kind": kind,
            "params": json.dumps(self.params, sort_keys=True),
            "extra": json.dumps(extra, sort_keys=True, default=str),
        }
        if ms:
            row.update(
                median_ms=statistics.median(ms),
                p10_ms=quantile(list(ms), 0.1),
                p90_ms=quantile(list(ms), 0.9),
                min_ms=min(ms),
                max_ms=max(ms),
            )
        self.rows.append(row)
        shown = f"{row['median_ms']:.4g} ms (p10 {row['p10_ms']:.4g}, p90 {row['p90_ms']:.4g})" if ms else ""
        facts = ", ".join(f"{k} {v}" for k, v in extra.items() if not isinstance(v, (dict, list)))
        print(f"  {self.case} | {variant}: {shown} {facts}".rstrip(), flush=True)


def skip_reason(needs: str | None) -> str | None:
    """Why a case that needs `needs` cannot run here, or None."""
    if needs is None:
        return None
    torch = _torch()
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if needs == "cuda" and count < 1:
        return "needs a CUDA GPU (none here)"
    if needs == "2 gpus" and count < 2:
        return f"needs two CUDA GPUs ({count} here)"
    return None


def load_cases(folder: Path) -> None:
    """Import every case module of folder (each under the name `cases_STEM`; one already
    imported is not imported again)."""
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.py")):
        name = f"cases_{path.stem}"
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


def _typed(default, text: str):
    if isinstance(default, bool):
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise SystemExit(f"expected a yes/no value, got {text!r}")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    return text


def parse_params(chosen: Case, small: bool, words: list[str]) -> dict:
    """The case's options: its defaults, --small's, then `--KEY VALUE` words (KEY with - or _;
    a yes/no option as `--KEY` or `--no-KEY`)."""
    params = dict(chosen.params)
    if small:
        params.update(chosen.small)
    position = 0
    while position < len(words):
        word = words[position]
        if not word.startswith("--"):
            raise SystemExit(f"case {chosen.name}: unexpected {word!r} (options are --KEY VALUE)")
        key = word[2:].replace("-", "_")
        negated = key.startswith("no_") and key[3:] in params and isinstance(params[key[3:]], bool)
        if negated or (key in params and isinstance(params[key], bool)):
            params[key[3:] if negated else key] = not negated
            position += 1
            continue
        if key not in params:
            known = ", ".join("--" + k.replace("_", "-") for k in params) or "none"
            raise SystemExit(f"case {chosen.name}: no option {word} (its options: {known})")
        if position + 1 >= len(words):
            raise SystemExit(f"case {chosen.name}: {word} needs a value")
        params[key] = _typed(params[key], words[position + 1])
        position += 2
    return params


def run_case(
    chosen: Case, params: dict, *, device: str | None = None, repeats=None, warmup=None, info=None
) -> tuple[list[dict], str | None]:
    """Run one case: (its rows, None) or ([], the reason it was skipped)."""
    reason = skip_reason(chosen.needs)
    if reason:
        return [], reason
    if device is None:
        device = params.get("device") or ("cuda" if chosen.needs or _cuda_ready() else "cpu")
    run = Run(chosen.name, params, str(device), info if info is not None else stamp(), repeats, warmup)
    try:
        chosen.run(run)
    except Skip as skipped:
        return run.rows, str(skipped)
    return run.rows, None


def describe(chosen: Case) -> str:
    options = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in chosen.params.items())
    needs = f" [{chosen.needs}]" if chosen.needs else ""
    return f"{chosen.name}{needs}: {chosen.doc}\n    options: {options or '-'}" + (
        f"\n    --small: {' '.join(f'--{k} {v}' for k, v in chosen.small.items())}" if chosen.small else ""
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("list", "case", "all"))
    parser.add_argument("names", nargs="*", help="case names (case)")
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="folder of case modules")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder of the table")
    parser.add_argument(
        "--machine", default=None, help="the table's machine (default: from the GPU or cores)"
    )
    parser.add_argument("--small", action="store_true", help="each case's small sizes")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats of every measure")
    parser.add_argument("--warmup", type=int, default=None, help="warm-up calls of every measure")
    parser.add_argument("--no-table", action="store_true", help="print only")
    words = list(sys.argv[1:] if argv is None else argv)
    # each case's own options follow its name: split them off before argparse sees them
    known = {flag for action in parser._actions for flag in action.option_strings}
    ours, theirs = words, []
    for position, word in enumerate(words):
        if word.startswith("--") and word.split("=")[0] not in known:
            ours, theirs = words[:position], words[position:]
            break
    args = parser.parse_args(ours)
    load_cases(args.cases)
    if args.command == "list":
        for chosen in CASES.values():
            print(describe(chosen))
        return 0
    if args.command == "all":
        if theirs:
            raise SystemExit("all takes no case options; run `case NAME --KEY VALUE` for those")
        names = list(CASES)
    else:
        names = args.names
        if not names:
            raise SystemExit("case: name at least one case (`list` shows them)")
    unknown = [name for name in names if name not in CASES]
    if unknown:
        raise SystemExit(f"no case {', '.join(unknown)}; the cases: {', '.join(CASES)}")
    info = stamp()
    table = args.out / f"table-{args.machine or machine_label(info['gpu'])}.csv"
    failed = 0
    for name in names:
        chosen = CASES[name]
        params = parse_params(chosen, args.small, theirs)
        print(f"{name} ...", flush=True)
        rows, reason = run_case(chosen, params, repeats=args.repeats, warmup=args.warmup, info=info)
        if reason:
            print(f"  skipped: {reason}", flush=True)
        if rows and not args.no_table:
            append_rows(table, rows)
        failed += any(json.loads(row["extra"]).get("failed") for row in rows)
    if not args.no_table:
        print(f"table: {table}")
    return 1 if failed else 0


if __name__ == "__main__":
    # run as a module, this file is __main__: the cases register with the imported module
    from . import harness

    sys.exit(harness.main())
