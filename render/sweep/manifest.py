"""The manifest: outputs/<sweep>/manifest.jsonl, one JSON record per change of a job's status,
so that a sweep killed at any moment finishes when the same command runs again.

On a local disk the file is appended to and synced record by record (Manifest). In object
storage (base/storage.py) an object cannot be appended to: StoredManifest keeps the lines and
stores the whole object again (one PUT), after the files its records name are stored, so the
manifest is always the last thing written; not sooner after the last store than its size at
STORE_RATE takes (a 20 KB manifest: 20 ms, at once for a small sweep; a 1,000-job sweep's 2 MB:
2 s), and once at the end (flush). So the uploads average at most STORE_RATE, where a store per
record uploaded 2n^2 records' bytes for n jobs (2 GB for 1,000 jobs of 1 KB records). A driver
killed between two stores loses the records of those last seconds: those jobs run again on
resume, their stored files replaced by the same bytes."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from ..base.errors import RenderError, name_file, printable
from ..base.files import parse_json
from ..base.inputs import MAX_TEXT_BYTES, excerpt, read_text
from ..base.storage import LocalStore, Store, is_url, open_store, restored
from ..preset.carried import MAX_CARRIED_BYTES
from .expand import Job, Sweep

# The types a record's fields must have where present (id and status always are).
FIELD_TYPES = {
    "id": str,
    "name": str,
    "index": int,
    "status": str,
    "params": dict,
    "preset": dict,
    "outputs": (dict, type(None)),
    "error": (str, type(None)),
    "seconds": (int, float, type(None)),
    "device": (str, type(None)),
    "time": str,
    "files": (dict, type(None)),
    "extras": (list, type(None)),
    "attempt": int,
    "max_attempts": int,
}
# The keys of a job's preset that name the files it writes into its folder: the seed (in every
# file's name, <name>-s<seed>), its formats and its print stills (the record's extras). Job folders
# are named by index, so a resume whose job of a name differs in one of them from the manifest's
# would leave both jobs' files in one folder (mixed_files).
FILE_KEYS = ("seed", "output.formats", "output.still")
MAX_MANIFEST_BYTES = 1 << 30  # a stored manifest is read up to this size
STORE_RATE = 1 << 20  # bytes per second a manifest in object storage is stored at, at most


def record_problem(record) -> str | None:
    """Why a manifest line is no record a sweep can use (a wrong-typed or missing field), or None."""
    if not isinstance(record, dict):
        return f"a {type(record).__name__}, not an object"
    for key in ("id", "status"):
        if key not in record:
            return f"no {key!r}"
    for key, types in FIELD_TYPES.items():
        value = record.get(key)
        if key in record and (not isinstance(value, types) or isinstance(value, bool)):
            return f"{key!r} is {type(value).__name__} {printable(repr(value)[:40])}"
    outputs = record.get("outputs") or {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in outputs.items()):
        return "'outputs' is not an object of paths"
    files = record.get("files") or {}
    for value in files.values():
        if not (
            isinstance(value, dict)
            and isinstance(value.get("bytes"), int)
            and isinstance(value.get("sha256"), str)
        ):
            return "'files' is not an object of sizes and sha256 digests"
    return None


def _warn(line: str) -> None:
    print(printable(line), file=sys.stderr, flush=True)


class Manifest:
    """outputs/<sweep>/manifest.jsonl, appended to and synced record by record.

    A job's state is its last record. A line torn by a kill mid-write is skipped on reading,
    and the next record starts on a fresh line. A record with a missing or wrong-typed field
    (record_problem) is skipped too, with one warning line (`warn`) per line, once per Manifest.
    """

    def __init__(self, path: Path, warn: Callable[[str], None] | None = None):
        self.path = Path(path)
        self.warn = warn or _warn
        self._warned: set[int] = set()

    def records(self) -> list[dict]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return _parse(text, self.path, self.warn, self._warned)

    def latest(self) -> dict[str, dict]:
        """The last record of every job id."""
        return {record["id"]: record for record in self.records()}

    def append(self, record: dict) -> None:
        """Append one record and sync it to disk before returning."""
        line = json.dumps(record, separators=(",", ":")) + "\n"
        try:
            with open(self.path, "ab") as file:
                if file.tell() > 0:
                    with open(self.path, "rb") as check:
                        check.seek(-1, os.SEEK_END)
                        if check.read(1) != b"\n":
                            line = "\n" + line
                file.write(line.encode("utf-8"))
                file.flush()
                os.fsync(file.fileno())
        except OSError as error:  # a full disk names no file: name the manifest
            raise name_file(error, self.path) from None

    def flush(self) -> None:
        """Nothing to do: each record is on the disk once added."""

    def extend(self, records: list[dict]) -> None:
        for record in records:
            self.append(record)


def _parse(text: str, where, warn, warned: set[int]) -> list[dict]:
    """The usable records of a manifest's text; a torn line is skipped, a wrong-typed record
    too with one warning (once per line number in `warned`)."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            record = parse_json(line)
        except ValueError:  # JSONDecodeError, or nested beyond files.MAX_JSON_DEPTH
            continue  # torn by a kill while it was written: its job runs again
        problem = record_problem(record)
        if problem is None:
            records.append(record)
        elif number not in warned:
            warned.add(number)
            warn(f"warning: {where}:{number}: record skipped ({problem}); its job runs again")
    return records


class StoredManifest:
    """manifest.jsonl in object storage: read once, kept here, and stored whole (one PUT) by an
    append or extend once its size at `rate` bytes a second has passed since the last store, and
    by flush() (the records between wait for the next). A write the store refuses is a
    RenderError naming its URL."""

    def __init__(
        self,
        store: Store,
        warn: Callable[[str], None] | None = None,
        rate: float = STORE_RATE,
        guard: Callable[[], None] | None = None,
    ):
        self.store = store
        self.rate = rate
        self.guard = guard  # called before each store: raises where the sweep may store no more
        self.stored_at = -math.inf  # time.monotonic() of the last store
        self.unstored = False
        self.path = store.location / "manifest.jsonl"
        self.warn = warn or _warn
        self._warned: set[int] = set()
        try:
            data = store.read_bytes("manifest.jsonl", MAX_MANIFEST_BYTES)
        except FileNotFoundError:
            data = b""
        except (OSError, ValueError) as error:
            raise RenderError(f"{self.path}: cannot read the sweep's manifest: {error}") from None
        self._text = data.decode("utf-8", errors="replace")
        if self._text and not self._text.endswith("\n"):
            self._text += "\n"  # a torn last line stays torn: the next record starts afresh

    def records(self) -> list[dict]:
        return _parse(self._text, self.path, self.warn, self._warned)

    def latest(self) -> dict[str, dict]:
        return {record["id"]: record for record in self.records()}

    def append(self, record: dict) -> None:
        self.extend([record])

    def extend(self, records: list[dict]) -> None:
        if not records:
            return
        self._text += "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
        self.unstored = True
        if time.monotonic() - self.stored_at >= len(self._text) / self.rate:
            self.flush()

    def flush(self) -> None:
        """Store the records not stored yet (one PUT of the whole manifest), where the guard
        lets it (a sweep that lost its store lock stores no manifest: lock.StoreLock.check)."""
        if self.unstored:
            if self.guard is not None:
                self.guard()
            self.store.write_bytes("manifest.jsonl", self._text.encode("utf-8"))
            self.unstored, self.stored_at = False, time.monotonic()


def sweep_store(out_dir: str | Path, name: str) -> Store:
    """The store of a sweep's folder OUT/<name>: a LocalStore, or in object storage where `out_dir`
    is a URL (base/storage.py; a URL that pathlib collapsed is put back)."""
    out = restored(out_dir)
    if is_url(out):
        return open_store(f"{out.rstrip('/')}/{name}")
    return LocalStore(Path(out) / name)


def local_path(path) -> str | None:
    """`path` if it names a file inside the sweep folder: relative, no scheme or drive (no ':'),
    no '..', no backslash or control character; else None. Only such paths are linked or read,
    whatever the manifest says."""
    if not isinstance(path, str) or not path or not path.isprintable():
        return None
    if ":" in path or "\\" in path or path.startswith("/"):
        return None
    parts = PurePosixPath(path).parts
    if not parts or any(part in ("..", ".") for part in parts):
        return None
    return path


def now() -> str:
    """The time as records carry it: UTC, ISO 8601, to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def job_record(job: Job, status: str, **fields) -> dict:
    """A record of a job's status: its id, name, index, values, preset and the time, then `fields`
    (an outcome's: outputs, seconds, device, error, ...)."""
    record = {
        "id": job.id,
        "name": job.name,
        "index": job.index,
        "status": status,
        "params": job.params,
        "preset": job.preset.model_dump(mode="json"),
        "time": now(),
    }
    record.update(fields)
    return record


# a job's sidecar is read up to this size (its preset twice, the carried images once, and room);
# a larger one is not the job's
SIDECAR_BYTES = 2 * (MAX_TEXT_BYTES + MAX_CARRIED_BYTES) + MAX_TEXT_BYTES


def outputs_complete(sweep_dir: Path | Store, record: dict | None, job: Job) -> bool:
    """A done record whose files all exist, with the sidecar carrying this job's preset; in
    object storage (a Store), each file also of the size and sha256 the record names."""
    if not record or record.get("status") != "done":
        return False
    outputs = record.get("outputs") or {}
    if set(outputs) != {*job.preset.output.formats, "json"}:
        return False
    if isinstance(sweep_dir, Store):
        return _stored_complete(sweep_dir, record, job)
    if not all(local_path(path) and (sweep_dir / path).is_file() for path in outputs.values()):
        return False
    try:  # a file in the folder: bounded in size and nesting (inputs.read_text, files.parse_json)
        sidecar = parse_json(read_text(sweep_dir / outputs["json"], SIDECAR_BYTES))
    except (OSError, ValueError):
        return False
    return isinstance(sidecar, dict) and sidecar.get("preset") == job.preset.portable_dump()


def _stored_complete(store: Store, record: dict, job: Job) -> bool:
    """outputs_complete in a store: every output named with its size and sha256 in the record's
    `files`, there and whole (read back and hashed), the sidecar carrying the job's preset."""
    outputs, files = record["outputs"], record.get("files") or {}
    if not all(local_path(path) and path in files for path in outputs.values()):
        return False
    if not all(store.whole(path, files[path]["bytes"], files[path]["sha256"]) for path in outputs.values()):
        return False
    try:
        sidecar = parse_json(store.read_bytes(outputs["json"], SIDECAR_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(sidecar, dict) and sidecar.get("preset") == job.preset.portable_dump()


def job_states(
    sweep: Sweep, sweep_dir: Path | Store, manifest: Manifest | StoredManifest | None = None
) -> dict[str, str]:
    """What a run would do with each job: done, failed, or pending (read only). `sweep_dir`: the
    sweep's folder, or its Store."""
    if manifest is None:
        manifest = (
            StoredManifest(sweep_dir)
            if isinstance(sweep_dir, Store) and not sweep_dir.local
            else Manifest(
                (sweep_dir.root if isinstance(sweep_dir, Store) else Path(sweep_dir)) / "manifest.jsonl"
            )
        )
    if isinstance(sweep_dir, Store) and sweep_dir.local:
        sweep_dir = sweep_dir.root
    latest = manifest.latest()
    states = {}
    for job in sweep.jobs:
        record = latest.get(job.id)
        if outputs_complete(sweep_dir, record, job):
            states[job.id] = "done"
        elif record and record.get("status") == "failed":
            states[job.id] = "failed"
        else:
            states[job.id] = "pending"
    return states


def job_files(preset: dict) -> dict:
    """The FILE_KEYS of a preset's JSON dump (a record's `preset`), by dotted key."""
    output = preset.get("output") if isinstance(preset.get("output"), dict) else {}
    return {
        "seed": preset.get("seed"),
        "output.formats": output.get("formats"),
        "output.still": output.get("still"),
    }


def preset_files(preset) -> dict:
    """job_files of a Preset, without dumping all of it."""
    still = preset.output.still
    return {
        "seed": preset.seed,
        "output.formats": list(preset.output.formats),
        "output.still": None if still is None else still.model_dump(mode="json"),
    }


def mixed_files(sweep: Sweep, records: list[dict]) -> str | None:
    """Why this run would mix two kinds of jobs in one job folder, or None: a job whose name the
    manifest's last record of that name gives with another id and other FILE_KEYS (another
    seed, other formats or other print stills, the extras: the first run's files would stay
    beside this run's, and be listed among its extras). The first such job and keys are named."""
    last = {record["name"]: record for record in records if isinstance(record.get("name"), str)}
    differ = []
    for job in sweep.jobs:
        record = last.get(job.name)
        if record is None or record["id"] == job.id or not isinstance(record.get("preset"), dict):
            continue
        before, now = job_files(record["preset"]), preset_files(job.preset)
        keys = [key for key in FILE_KEYS if before[key] != now[key]]
        if keys:
            differ.append((job.name, keys, before, now))
    if not differ:
        return None
    name, keys, before, now = differ[0]
    said = "; ".join(f"{key} {_value(before[key])} then, {_value(now[key])} now" for key in keys)
    more = f" (and {len(differ) - 1} more job{'s' * (len(differ) > 2)})" if len(differ) > 1 else ""
    return (
        f"this run's jobs write other files than the manifest's jobs of the same names: {name}: "
        f"{said}{more}; resumed, their folders would hold both runs' files. Run the sweep as it was "
        "written, or into another --out (or remove the sweep's folder to start it afresh)"
    )


def refuse_mixed_files(sweep: Sweep, manifest: Manifest | StoredManifest) -> None:
    """RenderError naming the manifest where resuming it would mix two kinds of jobs
    (mixed_files), before any job runs: a run's and a dry run's check."""
    problem = mixed_files(sweep, manifest.records())
    if problem:
        raise RenderError(f"{manifest.path}: {problem}")


def _value(value) -> str:
    return "none" if value is None else printable(excerpt(value, 80))
