"""The manifest: records appended whole, a torn line skipped."""

from __future__ import annotations

import json

from physarum.render import sweep as sweeps


def test_manifest_skips_a_torn_line_and_appends_on_a_fresh_one(tmp_path):
    manifest = sweeps.Manifest(tmp_path / "manifest.jsonl")
    manifest.append({"id": "a", "status": "done"})
    with open(manifest.path, "a") as file:
        file.write('{"id": "b", "stat')  # a kill in the middle of a write
    manifest.append({"id": "c", "status": "running"})
    assert [r["id"] for r in manifest.records()] == ["a", "c"]


def test_manifest_skips_a_wrong_typed_record_with_one_warning(tmp_path):
    warnings = []
    manifest = sweeps.Manifest(tmp_path / "manifest.jsonl", warnings.append)
    manifest.append({"id": "a", "status": "done"})
    for bad in (
        {"id": "b", "status": "done", "params": "model.decay=1"},
        {"id": 3, "status": "done"},
        {"status": "done"},
        {"id": "c", "status": "done", "outputs": {"gif": 5}},
        {"id": "d", "status": "done", "preset": ["x"], "index": "1"},
        ["id", "e"],
    ):
        manifest.append(bad)
    manifest.append({"id": "f", "status": "running"})
    assert [r["id"] for r in manifest.records()] == ["a", "f"]
    assert [r["id"] for r in manifest.records()] == ["a", "f"]
    assert len(warnings) == 6 and all("manifest.jsonl:" in w and "skipped" in w for w in warnings)
    assert "'params' is str" in warnings[0] and "no 'id'" in warnings[2]


def test_a_done_job_whose_sidecar_nests_too_deep_runs_again_without_a_traceback(tmp_path, monkeypatch):
    """A sidecar in the sweep's folder is a file like any other: nested 100000 levels deep (once
    a RecursionError, a traceback) or larger than SIDECAR_BYTES, the job is not done."""
    from physarum.render.sweep import manifest as manifests
    from physarum.render.sweep.manifest import job_record, job_states
    from support import expand_inline

    sweep = expand_inline({"grid": {"model.decay": [0.1]}})
    job = sweep.jobs[0]
    folder = tmp_path / job.name
    folder.mkdir()
    outputs = {kind: f"{job.name}/{job.name}.{kind}" for kind in (*job.preset.output.formats, "json")}
    for path in outputs.values():
        (tmp_path / path).write_text("x")
    manifest = sweeps.Manifest(tmp_path / "manifest.jsonl")
    manifest.append(job_record(job, "done", outputs=outputs))
    sidecar = tmp_path / outputs["json"]
    sidecar.write_text('{"preset": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert job_states(sweep, tmp_path, manifest) == {job.id: "pending"}
    own = json.dumps({"preset": job.preset.portable_dump()})
    sidecar.write_text(own)  # the job's own
    assert job_states(sweep, tmp_path, manifest) == {job.id: "done"}
    monkeypatch.setattr(manifests, "SIDECAR_BYTES", len(own) - 1)
    assert job_states(sweep, tmp_path, manifest) == {job.id: "pending"}


def test_a_stored_manifest_is_stored_at_most_at_its_rate_and_whole_at_flush(monkeypatch):
    """A manifest in object storage is one object stored whole: records that come sooner after its
    last store than its size takes at the rate wait for the next store or for flush()."""
    from physarum.render.base.storage import open_store
    from physarum.render.sweep.manifest import StoredManifest

    store = open_store("memory://manifests/coalesced")
    puts = []
    write_bytes = store.write_bytes
    monkeypatch.setattr(store, "write_bytes", lambda rel, data: (puts.append(data), write_bytes(rel, data)))
    clock = [1000.0]
    monkeypatch.setattr("physarum.render.sweep.manifest.time.monotonic", lambda: clock[0])
    try:
        manifest = StoredManifest(store, rate=100.0)  # 100 bytes a second: a record's 30 bytes wait 0.3 s
        manifest.extend([{"id": "a", "status": "running"}])  # the first is stored at once
        for name in "bcdefghij":
            clock[0] += 0.1
            manifest.append({"id": name, "status": "done"})
        assert len(puts) == 1  # 10 records' 300 bytes wait 3 s; 0.9 s passed
        clock[0] += 3.0
        manifest.append({"id": "k", "status": "done"})
        assert len(puts) == 2 and puts[-1].count(b"\n") == 11
        manifest.append({"id": "l", "status": "done"})
        manifest.flush()
        manifest.flush()  # nothing new: no PUT
        assert len(puts) == 3
        again = StoredManifest(store)
        assert [r["id"] for r in again.records()] == list("abcdefghijkl")
        quick = StoredManifest(store)  # at the default rate, a small manifest is stored each time
        quick.append({"id": "m", "status": "done"})
        clock[0] += 0.01
        quick.append({"id": "n", "status": "done"})
        assert len(puts) == 5
    finally:
        store.fs.rm("/manifests", recursive=True)


def test_a_resume_whose_jobs_write_other_files_under_the_same_names_is_named():
    """Job folders are named by index: a resumed sweep whose job of a name writes other files
    (another seed, formats or print stills: the record's extras) than the manifest's job of that
    name is one message naming the job and what differs; other changes rerun the jobs as before."""
    import copy

    from physarum.render.sweep.manifest import job_record, mixed_files
    from support import SWEEP_BASE, expand_inline

    base = copy.deepcopy(SWEEP_BASE)
    base["output"] = {"formats": ["png"], "still": {"scale": 2, "formats": ["tiff"]}}
    first = expand_inline({"grid": {"model.decay": [0.1, 0.2]}}, base=base)
    records = [job_record(job, status) for job in first.jobs for status in ("running", "done")]
    assert mixed_files(first, records) is None  # the same sweep resumes
    other_decay = expand_inline({"grid": {"model.decay": [0.3, 0.4]}}, base=base)
    assert mixed_files(other_decay, records) is None  # the same files, rewritten by other jobs
    no_still = copy.deepcopy(base)
    del no_still["output"]["still"]
    assert mixed_files(expand_inline({"grid": {"model.decay": [0.1, 0.2]}}, base=no_still), records) == (
        "this run's jobs write other files than the manifest's jobs of the same names: s-0000: "
        "output.still {'scale': 2, 'formats': ['tiff']} then, none now (and 1 more job); resumed, "
        "their folders would hold both runs' files. Run the sweep as it was written, or into "
        "another --out (or remove the sweep's folder to start it afresh)"
    )
    reseeded = expand_inline({"grid": {"model.decay": [0.1]}, "seeds": [3, 4]}, base=base)
    problem = mixed_files(reseeded, records)  # s-0001 was decay 0.2 seed 3, now decay 0.1 seed 4
    assert problem.startswith(
        "this run's jobs write other files than the manifest's jobs of the same names: s-0001: seed 3 then, 4 now;"
    )
    more_formats = copy.deepcopy(base)
    more_formats["output"]["formats"] = ["gif", "png"]
    problem = mixed_files(expand_inline({"grid": {"model.decay": [0.1, 0.2]}}, base=more_formats), records)
    assert ": s-0000: output.formats ['png'] then, ['gif', 'png'] now (and 1 more job);" in problem
