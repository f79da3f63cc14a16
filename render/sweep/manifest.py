"""The manifest: outputs/<sweep>/manifest.jsonl, one JSON record per change of a job's status,
so that a sweep killed at any moment finishes when the same command runs again."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from physarum.render.sweep.expand import Job, Sweep


class Manifest:
    """outputs/<sweep>/manifest.jsonl, appended to and synced record by record.

    A job's state is its last record. A line torn by a kill mid-write is skipped on reading,
    and the next record starts on a fresh line.
    """

    def __init__(self, path: Path):
        self.path = Path(path)

    def records(self) -> list[dict]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        records = []
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # torn by a kill while it was written: its job runs again
            if isinstance(record, dict) and "id" in record:
                records.append(record)
        return records

    def latest(self) -> dict[str, dict]:
        """The last record of every job id."""
        return {record["id"]: record for record in self.records()}

    def append(self, record: dict) -> None:
        """Append one record and sync it to disk before returning."""
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with open(self.path, "ab") as file:
            if file.tell() > 0:
                with open(self.path, "rb") as check:
                    check.seek(-1, os.SEEK_END)
                    if check.read(1) != b"\n":
                        line = "\n" + line
            file.write(line.encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())


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


def outputs_complete(sweep_dir: Path, record: dict | None, job: Job) -> bool:
    """A done record whose files all exist, with the sidecar carrying this job's preset."""
    if not record or record.get("status") != "done":
        return False
    outputs = record.get("outputs") or {}
    if set(outputs) != {*job.preset.output.formats, "json"}:
        return False
    if not all((sweep_dir / path).is_file() for path in outputs.values()):
        return False
    try:
        sidecar = json.loads((sweep_dir / outputs["json"]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return sidecar.get("preset") == job.preset.portable_dump()


def job_states(sweep: Sweep, sweep_dir: Path) -> dict[str, str]:
    """What a run would do with each job: done, failed, or pending (read only)."""
    latest = Manifest(sweep_dir / "manifest.jsonl").latest()
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
