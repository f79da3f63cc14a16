"""The manifest: records appended whole, a torn line skipped."""

from __future__ import annotations

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
