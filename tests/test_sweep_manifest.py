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
